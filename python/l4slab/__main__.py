"""``python -m l4slab ...`` is the same as the ``l4slab`` command."""

import sys

from l4slab._start import main

sys.exit(main())
