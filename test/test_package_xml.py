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

"""
package.xml is valid and declares what the code imports, with real rosdep keys.

Each imported top-level module maps to the rosdep key that provides it (for Python modules of
ROS packages, the package that installs the module: ``tf2_ros`` comes from ``tf2_ros_py``);
modules without a key must be named in the README's install section with their pip command.
"""

from __future__ import annotations

import ast
from pathlib import Path
import sys

import pytest

ROOT = Path(__file__).resolve().parents[1]

# module -> rosdep key (ROS packages: rosdistro; Python: ros/rosdistro rosdep/python.yaml).
KEYS = {
    'rclpy': 'rclpy', 'rcl_interfaces': 'rcl_interfaces', 'builtin_interfaces':
    'builtin_interfaces', 'lifecycle_msgs': 'lifecycle_msgs', 'sensor_msgs': 'sensor_msgs',
    'std_msgs': 'std_msgs', 'geometry_msgs': 'geometry_msgs', 'diagnostic_msgs':
    'diagnostic_msgs', 'message_filters': 'message_filters', 'cv_bridge': 'cv_bridge',
    'sensor_msgs_py': 'sensor_msgs_py', 'tf2_ros': 'tf2_ros_py', 'tf2_msgs': 'tf2_msgs',
    'rosgraph_msgs': 'rosgraph_msgs',
    'ament_index_python': 'ament_index_python', 'launch': 'launch', 'launch_ros': 'launch_ros',
    'numpy': 'python3-numpy', 'yaml': 'python3-yaml', 'matplotlib': 'python3-matplotlib',
    'PIL': 'python3-pil', 'tqdm': 'python3-tqdm', 'torch': 'python3-torch',
    'transformers': 'python3-transformers-pip', 'huggingface_hub': 'python3-huggingface-hub-pip',
    'rosbags': 'python3-rosbags-pip', 'cv2': 'python3-opencv',
}
# No rosdep key: installed with pip (README, "Build and install").
PIP_ONLY = {'peft': 'peft', 'safetensors': 'safetensors'}
# Optional, imported on first use with an install hint (setup.py extras: NYUv2 .mat files,
# the ONNX Runtime / TensorRT encoder, Ray, KISS-ICP odometry).
OPTIONAL = {'h5py', 'kiss_icp', 'onnxruntime', 'onnx', 'ray', 'tensorrt'}


def imported_modules() -> set[str]:
    modules = set()
    for path in [*(ROOT / 'lrda_ros').rglob('*.py'), *(ROOT / 'launch').glob('*.py')]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split('.')[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split('.')[0])
    return {m for m in modules if m not in sys.stdlib_module_names and m != 'lrda_ros'}


def test_package_xml_validates_with_catkin_pkg():
    package = pytest.importorskip('catkin_pkg.package',
                                  reason='catkin_pkg is not installed (requirements-dev.txt)')
    parsed = package.parse_package(str(ROOT / 'package.xml'))
    parsed.validate()
    assert parsed.name == 'lrda_ros'


def test_every_import_is_declared_or_documented():
    text = (ROOT / 'package.xml').read_text()
    readme = (ROOT / 'README.md').read_text()
    modules = imported_modules()
    unknown = modules - KEYS.keys() - PIP_ONLY.keys() - OPTIONAL
    assert not unknown, f'imports without a known rosdep key or pip entry: {sorted(unknown)}'
    for module in sorted(modules & KEYS.keys()):
        assert f'<exec_depend>{KEYS[module]}</exec_depend>' in text, module
    for module in sorted(modules & PIP_ONLY.keys()):
        assert 'pip install' in readme and PIP_ONLY[module] in readme, module
    # The C++ tf2_ros does not install the Python module.
    assert '<exec_depend>tf2_ros</exec_depend>' not in text
