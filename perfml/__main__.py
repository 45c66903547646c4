import sys

from perfml.cli import main

sys.exit(main())
