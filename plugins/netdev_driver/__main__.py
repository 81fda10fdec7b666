"""`python -m plugins.netdev_driver`: same as the nodeagent-netdev-driver console script."""

from plugins.netdev_driver.main import main

raise SystemExit(main())
