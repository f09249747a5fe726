"""`python -m raysim +experiment=venus ...`: the Hydra entry point."""

from raysim.cli import hydra_main

if __name__ == "__main__":
    hydra_main()
