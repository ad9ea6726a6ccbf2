# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""Sphinx configuration: ``tox -e docs`` builds with warnings as errors."""

import pathlib
import sys

# NOTE(docs): the project's own extensions (release notes) live beside the
# sources.
sys.path.insert(0, str(pathlib.Path(__file__).parent / "_ext"))

project = "ironic-accel"
copyright = "ironic-accel developers"
extensions = [
    "oslo_config.sphinxext",
    "oslo_policy.sphinxext",
    "release_notes",
]
exclude_patterns = ["build"]
html_theme = "alabaster"
# NOTE(docs): nothing is fetched at build time (no intersphinx): the docs
# build offline, as CI does.
