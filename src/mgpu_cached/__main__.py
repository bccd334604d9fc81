"""``python -m mgpu_cached`` is the ``mgpu-cached`` command."""
import sys

from .cli import main

sys.exit(main())
