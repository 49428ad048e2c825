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


"""The Fast DDS settings lrda_ros' processes give themselves for large samples."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

from lrda_ros.ros.transport import (
    large_sample_environment, LARGE_SAMPLES_PROFILE, SEGMENT_BYTES)

ROOMY = 1 << 34  # /dev/shm free bytes of a usual host
NS = {'dds': 'http://www.eprosima.com'}


def test_both_settings_are_added_when_the_user_chose_none():
    assert large_sample_environment({}, ROOMY) == {
        'FASTDDS_BUILTIN_TRANSPORTS': 'LARGE_DATA',
        'FASTDDS_DEFAULT_PROFILES_FILE': str(LARGE_SAMPLES_PROFILE)}


def test_the_users_choices_are_kept():
    assert large_sample_environment({'FASTDDS_BUILTIN_TRANSPORTS': 'DEFAULT'}, ROOMY) == {
        'FASTDDS_DEFAULT_PROFILES_FILE': str(LARGE_SAMPLES_PROFILE)}
    for variable in ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE'):
        assert large_sample_environment({variable: '/mine.xml'}, ROOMY) == {
            'FASTDDS_BUILTIN_TRANSPORTS': 'LARGE_DATA'}


def test_no_profile_where_shared_memory_is_small():
    # A default Docker container has 64 MiB of /dev/shm.
    assert 'FASTDDS_DEFAULT_PROFILES_FILE' not in large_sample_environment({}, 64 << 20)


def test_the_profile_is_a_default_participant_profile_with_the_large_segment():
    root = ElementTree.parse(LARGE_SAMPLES_PROFILE).getroot()
    descriptor = root.find('dds:profiles/dds:transport_descriptors/dds:transport_descriptor', NS)
    assert descriptor.find('dds:type', NS).text == 'SHM'
    assert int(descriptor.find('dds:segment_size', NS).text) == SEGMENT_BYTES
    # Several 1920x1200 rgb8 images fit in flight.
    assert SEGMENT_BYTES >= 4 * 1920 * 1200 * 3
    participant = root.find('dds:profiles/dds:participant', NS)
    assert participant.get('is_default_profile') == 'true'
    used = participant.find('dds:rtps/dds:userTransports/dds:transport_id', NS).text
    assert used == descriptor.find('dds:transport_id', NS).text
    # Added next to the built-in transports (LARGE_DATA), not instead of them.
    assert participant.find('dds:rtps/dds:useBuiltinTransports', NS) is None
