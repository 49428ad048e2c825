#!/usr/bin/env bash
# Copyright 2026 lrda_ros maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Measure the package on a GPU in at most 8 minutes, with no network and no ROS:
#
#   benchmarks/gpu_check.sh                        # CUDA; the report goes to $OUT
#   benchmarks/gpu_check.sh --device cpu --quick   # the dry run, a minute or two
#   benchmarks/gpu_check.sh --help                 # the options (benchmarks/gpu_check.py)
#
# The package comes from this checkout (nothing is installed); PYTHON picks the interpreter
# (default: python3, which on a CUDA image is the one with torch).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" "$root/benchmarks/gpu_check.py" "$@"
