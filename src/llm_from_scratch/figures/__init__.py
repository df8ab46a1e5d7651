"""Static, accessible HTML figures drawn from a trace or a report, never from the layers; every
word comes from :mod:`llm_from_scratch.labels`."""
