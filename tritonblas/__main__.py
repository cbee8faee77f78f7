import sys

from tritonblas.cli import main

sys.exit(main())
