"""`python -m driftline`: the same CLI as the `driftline` console command."""

from .cli import main

raise SystemExit(main())
