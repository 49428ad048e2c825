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
Image and PointCloud2 reading through cv_bridge and sensor_msgs_py where they are installed.

One interface, two implementations, as ``sync.py`` does for message_filters: the ROS packages
where importable, the numpy code of ``conversions.py`` otherwise and for the layouts they do
not handle correctly (big-endian data, padded cloud rows, mixed x/y/z types). Validation is
always ``conversions.py``'s, so both paths accept and reject the same messages.

Measured on 2 CPU cores (a 120k-point x, y, z, intensity cloud, a 1242x375 rgb8 image):
reading the cloud takes 0.05 ms with ``read_points_numpy`` against 4.4 ms with numpy, the
image 0.11 ms with ``imgmsg_to_cv2`` against 3.1 ms. Building the outputs is not faster with
them (``cv2_to_imgmsg`` 0.34 ms against 0.13 ms for the 32FC1 depth), so outputs stay numpy.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..messages.conversions import (
    image_to_rgb as numpy_image_to_rgb, MalformedMessageError, pixel_rows, pointcloud2_to_xyz
    as numpy_pointcloud2_to_xyz, pointcloud2_view, RGB_ENCODINGS)
from ..messages.point_times import CloudRead, find_time_layout, NO_TIME_FIELD, read_cloud

BACKEND_NATIVE = 'native'
BACKEND_NUMPY = 'numpy'
_LITTLE_ENDIAN_HOST = sys.byteorder == 'little'


def _import_cv_bridge():
    try:
        from cv_bridge import CvBridge, CvBridgeError
    except ImportError:
        return None
    return CvBridge(), CvBridgeError


def _import_point_cloud2():
    try:
        from sensor_msgs_py import point_cloud2
    except ImportError:
        return None
    return point_cloud2


class MessageReader:
    """
    Read camera images and LiDAR clouds into arrays, natively where possible.

    ``image_backend`` / ``cloud_backend`` say which path is in use ('native' or 'numpy').
    """

    def __init__(self, prefer_native: bool = True) -> None:
        self._cv_bridge = _import_cv_bridge() if prefer_native else None
        self._point_cloud2 = _import_point_cloud2() if prefer_native else None

    @property
    def image_backend(self) -> str:
        return BACKEND_NATIVE if self._cv_bridge else BACKEND_NUMPY

    @property
    def cloud_backend(self) -> str:
        return BACKEND_NATIVE if self._point_cloud2 else BACKEND_NUMPY

    def image_to_rgb(self, msg: Any) -> np.ndarray:
        """Return an ``(H, W, 3)`` uint8 RGB array (as ``conversions.image_to_rgb``)."""
        # cv_bridge's big-endian path needs numpy < 2 (ndarray.newbyteorder), and it reads
        # rows whose step is not a whole number of pixels misaligned: numpy does those.
        channels = RGB_ENCODINGS.get(msg.encoding, (None, 0))[1]
        if self._cv_bridge is None or not channels or msg.is_bigendian \
                or int(msg.step) % channels:
            return numpy_image_to_rgb(msg)
        pixel_rows(msg, channels, channels, 'u1')  # same validation as the numpy path
        bridge, bridge_error = self._cv_bridge
        try:
            return np.ascontiguousarray(bridge.imgmsg_to_cv2(msg, desired_encoding='rgb8'))
        except (bridge_error, TypeError, ValueError) as error:
            raise MalformedMessageError(f'cv_bridge cannot convert the image: {error}') from error

    def pointcloud2_to_xyz(self, msg: Any) -> np.ndarray:
        """Return the finite ``(N, 3)`` float32 x, y, z (as ``conversions.pointcloud2_to_xyz``)."""
        cloud = pointcloud2_view(msg)  # validation of both paths
        if self._point_cloud2 is None or not self._native_can_read(msg, cloud):
            return numpy_pointcloud2_to_xyz(msg)
        points = self._point_cloud2.read_points_numpy(msg, field_names=('x', 'y', 'z'),
                                                      skip_nans=True)
        xyz = np.asarray(points, dtype=np.float32).reshape(-1, 3)
        return xyz[np.all(np.isfinite(xyz), axis=1)]  # skip_nans keeps infinities

    def read_cloud(self, msg: Any, time_field: str = NO_TIME_FIELD) -> CloudRead:
        """
        Read a cloud once: its finite points and, by ``time_field``, their times.

        A cloud with a time field to read is read through one numpy view (points, validity and
        times together, ``point_times.read_cloud``); one without, as
        :meth:`pointcloud2_to_xyz` reads it.
        """
        try:
            has_times = find_time_layout(msg, time_field) is not None
        except MalformedMessageError:
            has_times = True  # read_cloud says why in its time_error
        return read_cloud(msg, time_field) if has_times else CloudRead(
            self.pointcloud2_to_xyz(msg))

    @staticmethod
    def _native_can_read(msg: Any, cloud: np.ndarray) -> bool:
        """read_points ignores row padding, byte-swaps in place, needs one coordinate type."""
        fields = cloud.dtype.fields
        same_type = len({fields[name][0].str for name in ('x', 'y', 'z')}) == 1
        return (cloud.size > 0 and same_type
                and bool(msg.is_bigendian) != _LITTLE_ENDIAN_HOST
                and int(msg.row_step) == int(msg.width) * int(msg.point_step))
