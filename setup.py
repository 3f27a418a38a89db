"""Package layout that pyproject.toml cannot express: the top-level ``corpora/`` folder is shipped inside
the wheel as the data package ``tokenloom.corpora`` (its folders as subpackages, every file in them as
package data); every other package is found under ``src/``."""

from setuptools import find_namespace_packages, find_packages, setup

corpora = ["tokenloom.corpora", *(f"tokenloom.corpora.{name}" for name in find_namespace_packages("corpora"))]

setup(
    packages=[*find_packages("src"), *corpora],
    package_dir={"": "src", "tokenloom.corpora": "corpora"},
    package_data={"tokenloom": ["py.typed"], **{name: ["*"] for name in corpora}},
)
