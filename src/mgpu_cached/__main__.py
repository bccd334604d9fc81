# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""``python -m mgpu_cached`` is the ``mgpu-cached`` command."""
import sys

from .cli import main

sys.exit(main())
