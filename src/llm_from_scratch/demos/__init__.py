"""The course's chapter demos: each computes a report, and separate code formats it."""
