from pyfreight.cli import main

raise SystemExit(main())
