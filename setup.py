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

from glob import glob

from setuptools import find_packages, setup

package_name = 'lrda_ros'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    package_data={
        package_name: ['weights/*/*.json', 'weights/*/*.safetensors', 'weights/*/*.md',
                       'ros/*.xml'],
    },
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.py')),
        ('share/' + package_name + '/config', glob('config/*')),
    ],
    python_requires='>=3.10',
    # torch is deliberately a range: install the build you want first (README); a satisfied
    # range installs nothing more.
    install_requires=[
        'setuptools',
        'numpy>=1.24',
        'opencv-python-headless>=4.5',
        'torch>=2.1',
        'transformers>=4.45',
        'peft>=0.13',
        'safetensors>=0.4',
        'rosbags>=0.10',
        'pillow>=9',
        'matplotlib>=3.6',
        'pyyaml>=6',
        'tqdm>=4.60',
    ],
    # `colcon test` runs pytest (the whole suite under test/, as `make test` does) only for a
    # package that names pytest as a test requirement; otherwise it runs unittest, which finds
    # none of these tests.
    # Optional paths, each with its own extra so the core install stays small: the encoder on
    # ONNX Runtime / TensorRT, recordings on a Ray cluster, LiDAR odometry for the temporal
    # metric where a bag has no /tf.
    extras_require={
        'test': ['pytest'],
        'onnx': ['onnx>=1.16', 'onnxruntime>=1.18'],
        'tensorrt': ['tensorrt>=10'],
        'cluster': ['ray>=2.30'],
        'odometry': ['kiss-icp>=1.0'],
        'nyuv2': ['h5py>=3.0'],
    },
    zip_safe=True,
    maintainer='lrda_ros maintainers',
    maintainer_email='maintainers@lrda-ros.dev',
    description='Zero-shot LiDAR + camera depth completion by decoder-only LoRA test-time '
                'optimization of Depth Anything V2, as a ROS 2 node.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'lrda = lrda_ros.cli:main',
            'completion_node = lrda_ros.ros.node:main',
            'completion_lifecycle_node = lrda_ros.ros.lifecycle_node:main',
            'evaluator_node = lrda_ros.ros.evaluator_node:main',
        ],
    },
)
