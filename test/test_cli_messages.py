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

"""What the lrda command says: every option's help and default, one line for bad input."""

from __future__ import annotations

import argparse
from pathlib import Path
import shutil

from lrda_ros import cli
from lrda_ros.cli.options import DefaultsHelpFormatter
import pytest

SHARED_BAGS = Path(__file__).resolve().parents[2] / 'shared' / 'data' / 'bags'
DB3_BAG = SHARED_BAGS / 'kitti_2011_09_26_3frames_db3'
MCAP_BAG = SHARED_BAGS / 'kitti_2011_09_26_10frames_mcap'


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.command_line()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sub for name, sub in subparsers.choices.items() if name not in cli.RENAMED}


@pytest.mark.parametrize('command', sorted(_commands()))
def test_every_option_has_help_and_shows_its_default(command):
    parser = _commands()[command]
    formatter = DefaultsHelpFormatter(prog=parser.prog)
    missing, no_default = [], []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        name = action.option_strings[-1] if action.option_strings else action.dest
        text = formatter._get_help_string(action)
        if not action.help:
            missing.append(name)
        # Flags are off unless given; positionals have no default.
        elif (action.option_strings and not isinstance(action, argparse._StoreTrueAction)
              and 'default' not in text):
            no_default.append(name)
    assert not missing, f'lrda {command}: options without help text: {missing}'
    assert not no_default, f'lrda {command}: options whose help shows no default: {no_default}'
    parser.format_help()  # every help text formats (a stray % would raise here)


def test_the_help_shows_typed_defaults_as_they_are_typed(capsys):
    with pytest.raises(SystemExit):
        cli.main(['speed', '--help'])
    text = ' '.join(capsys.readouterr().out.split())
    assert '(default: out/speed)' in text and '(default: vits)' in text


def _clouds_only(folder: Path) -> Path:
    """Write a bag with a LiDAR topic and no image topic."""
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import get_typestore, Stores

    bag = folder / 'clouds'
    typestore = get_typestore(Stores.ROS2_KILTED)
    with Writer(bag, version=8) as writer:
        writer.add_connection('/points', 'sensor_msgs/msg/PointCloud2', typestore=typestore)
    return bag


def _corrupt(source: Path, folder: Path) -> Path:
    """Copy a bag and cut its storage file to its first 20 kB, as an interrupted copy does."""
    bag = folder / source.name
    shutil.copytree(source, bag)
    for storage in list(bag.glob('*.db3')) + list(bag.glob('*.mcap')):
        storage.chmod(0o644)
        with open(storage, 'r+b') as handle:
            handle.truncate(20_000)
    return bag


#: case -> (arguments, exit status, words of the line); {empty}: an empty folder, {tmp}: the
#: test's folder, {db3} and {mcap}: copies of the shared bags cut short.
CASES = {
    'missing root': (['eval', '--dataset', 'kitti_dc', '--root', '{tmp}/nowhere'], 1,
                     'the dataset root'),
    'empty folder as a bag': (['eval', '--bag', '{empty}'], 1, 'not a rosbag2 folder'),
    'empty folder to play': (['play', '{empty}'], 1, 'not a rosbag2 folder'),
    'processing size': (['eval', '--dataset', 'kitti_dc', '--root', '{tmp}',
                         '--processing-size', '7'], 2, 'must be 0 or 14 .. 8192'),
    'densify processing size': (['densify', '{empty}', '--processing-size', '13'], 2,
                                'must be 0 or 14 .. 8192'),
    'iterations': (['eval', '--bag', '{empty}', '--iterations', '-1'], 2, 'must be >= 0'),
    'warm iterations': (['eval', '--bag', '{empty}', '--warm-iterations', '1001'], 2,
                        'must be <= 1000'),
    'learning rate': (['paper', '--learning-rate', '2'], 2, 'must be <= 1.0'),
    'slop': (['eval', '--bag', '{empty}', '--slop', '11'], 2, 'must be <= 10.0'),
    'queue size': (['eval', '--bag', '{empty}', '--queue-size', '0'], 2, 'must be >= 1'),
    'max frames': (['eval', '--bag', '{empty}', '--max-frames', '0'], 2, 'must be >= 1'),
    'paper max frames': (['paper', '--max-frames', '0'], 2, 'must be >= 1'),
    'figures': (['eval', '--bag', '{empty}', '--figures', '-1'], 2, 'must be >= 0'),
    'num points': (['eval', '--bag', '{empty}', '--num-points', '0'], 2, 'must be >= 1'),
    'max depth': (['eval', '--bag', '{empty}', '--max-depth', '0'], 2, 'must be > 0'),
    'holdout': (['eval', '--bag', '{empty}', '--holdout', '1.5'], 1, '--holdout must be'),
    'seed': (['eval', '--bag', '{empty}', '--seed', '-3'], 2, 'must be >= 0'),
    'budgets': (['eval', '--bag', '{empty}', '--budgets', 'fast'], 2,
                'expected comma-separated numbers'),
    'not a number': (['eval', '--bag', '{empty}', '--iterations', 'many'], 2,
                     "expected an integer, got 'many'"),
    'demo frames': (['demo', '--frames', '1'], 2, 'must be >= 2'),
    'demo size': (['demo', '--width', '8'], 2, 'must be >= 32'),
    'demo height': (['demo', '--height', '9000'], 2, 'must be <= 8192'),
    'demo beams': (['demo', '--beams', '0'], 2, 'must be >= 1'),
    'demo seed': (['demo', '--seed', '-1'], 2, 'must be >= 0'),
    'demo iterations': (['demo', '--iterations', '-1'], 2, 'must be >= 0'),
    'demo warm iterations': (['demo', '--warm-iterations', '-1'], 2, 'must be >= 0'),
    'speed iterations': (['speed', '--iterations', '-1'], 2, 'must be >= 0'),
    'speed warm iterations': (['speed', '--warm-iterations', '-1'], 2, 'must be >= 0'),
    'speed frames': (['speed', '--frames', '0'], 1, '--frames must be at least 1'),
    'speed lidar': (['speed', '--lidar-fraction', '0'], 1, '--lidar-fraction must be in'),
    'speed lidar top': (['speed', '--lidar-top', '1'], 1, '--lidar-top must be in [0, 1)'),
    'speed backbone': (['speed', '--backbones', 'vitx'], 1, '--backbones: unknown vitx'),
    'workers': (['paper', '--workers', '-1'], 2, 'must be >= 0'),
    'densify max frames': (['densify', '{empty}', '--max-frames', '0'], 2, 'must be >= 1'),
    'chunk frames': (['densify', '{empty}', '--chunk-frames', '-1'], 2, 'must be >= 0'),
    'play rate': (['play', '{empty}', '--rate', '0'], 2, 'must be > 0'),
    'play wait': (['play', '{empty}', '--wait', '-1'], 2, 'must be >= 0'),
    'play linger': (['play', '{empty}', '--linger', '-1'], 2, 'must be >= 0'),
    'play clock': (['play', '{empty}', '--clock', '0'], 2, 'must be > 0'),
    'hold-rate budget': (['hold-rate', '{empty}', '--budget', '-1'], 2, 'must be >= 0'),
    'hold-rate seconds': (['hold-rate', '{empty}', '--seconds', '0'], 2, 'must be > 0'),
    'hold-rate rate': (['hold-rate', '{empty}', '--rate', '0'], 2, 'must be > 0'),
    'hold-rate processing size': (['hold-rate', '{empty}', '--processing-size', '5'], 2,
                                  'must be 0 or 14 .. 8192'),
    'train-prior steps': (['train-prior', '--steps', '0'], 2, 'must be >= 1'),
    'train-prior views': (['train-prior', '--views', '0'], 2, 'must be >= 1'),
    'train-prior seed': (['train-prior', '--seed', '-1'], 2, 'must be >= 0'),
    'no image topic': (['eval', '--bag', '{clouds}'], 1,
                       'the bag has no sensor_msgs/msg/Image or sensor_msgs/msg/CompressedImage '
                       'topic for the image (its topics: /points (sensor_msgs/msg/PointCloud2))'),
    'no image topic to densify': (['densify', '{clouds}'], 1, 'the bag has no'),
    'corrupt db3': (['eval', '--bag', '{db3}'], 1, 'truncated or corrupt'),
    'corrupt mcap': (['eval', '--bag', '{mcap}'], 1, 'truncated or corrupt'),
    'corrupt db3 to densify': (['densify', '{db3}'], 1, 'truncated or corrupt'),
    'corrupt mcap to densify': (['densify', '{mcap}'], 1, 'truncated or corrupt'),
}


@pytest.mark.parametrize('case', sorted(CASES))
def test_bad_input_is_one_line_and_leaves_no_output(case, tmp_path, capsys, monkeypatch):
    arguments, status, words = CASES[case]
    places = {'tmp': tmp_path, 'empty': tmp_path / 'empty'}
    places['empty'].mkdir()
    if '{clouds}' in arguments:
        places['clouds'] = _clouds_only(tmp_path)
    if '{db3}' in arguments or '{mcap}' in arguments:
        if not DB3_BAG.is_dir():
            pytest.skip('the shared data is absent')
        places.update(db3=_corrupt(DB3_BAG, tmp_path), mcap=_corrupt(MCAP_BAG, tmp_path))
    arguments = [argument.format(**places) for argument in arguments]
    output = tmp_path / 'out'
    if arguments[0] not in ('play', 'hold-rate'):
        arguments += ['--output', str(output)]
    monkeypatch.chdir(tmp_path)
    code = cli.main(arguments) if status != 2 else None
    if status == 2:
        with pytest.raises(SystemExit) as ended:
            cli.main(arguments)
        code = ended.value.code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == status, err
    assert len(lines) == 1 and lines[0].startswith(f'lrda {arguments[0]}: error: '), err
    assert words in lines[0], err
    assert 'Traceback' not in err and '(a bug?' not in err
    if case.startswith('corrupt'):  # the storage file is named
        assert lines[0].split(': ')[2].endswith(('.db3', '.mcap')), err
    assert not output.exists()
