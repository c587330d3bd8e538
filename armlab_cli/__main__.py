import sys

from armlab_cli import main

sys.exit(main())
