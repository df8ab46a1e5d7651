"""``python -m llm_from_scratch`` runs the command line."""

import sys

from llm_from_scratch.cli import main

sys.exit(main())
