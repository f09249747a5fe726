"""`python -m raysim +experiment=venus ...`: the Hydra entry point."""

from raysim.cli import main

if __name__ == "__main__":
    main()
