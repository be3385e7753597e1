"""``python -m l4slab ...`` is the same as the ``l4slab`` command."""

import sys

from l4slab.cli import main

sys.exit(main())
