"""Package layout for setuptools (metadata lives in pyproject.toml).

The top-level conf/ (Hydra configs) and traces/ (shipped sample traces) folders are installed inside
the package as raysim.conf and raysim.traces, so `python -m raysim +experiment=venus` also works from
a wheel, without a checkout. hydra_plugins/ holds raysim's Hydra launcher (Hydra loads launchers
only from that namespace package).
"""

from setuptools import find_namespace_packages, find_packages, setup

DATA_DIRS = {"raysim.conf": ("conf", ["*.yaml"]), "raysim.traces": ("traces", ["*.md", "*.parquet", "*.csv"])}

packages = find_packages(include=["raysim", "raysim.*"]) + ["hydra_plugins.raysim_launcher"]
package_dir = {"raysim": "raysim", "hydra_plugins": "hydra_plugins"}
package_data = {"raysim.data": ["registry.yaml"],  # the dataset registry (raysim/data/registry.yaml)
                "raysim.report": ["assets/*"]}  # report.html's styles and scripts (uPlot, with its licence)
for name, (folder, patterns) in DATA_DIRS.items():
    package_dir[name] = folder
    for pkg in [name] + [f"{name}.{sub}" for sub in find_namespace_packages(folder)]:
        packages.append(pkg)
        package_data[pkg] = patterns

setup(packages=packages, package_dir=package_dir, package_data=package_data)
