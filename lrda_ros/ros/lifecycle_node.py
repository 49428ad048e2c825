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
The completion node as a managed (lifecycle) node: ``completion_lifecycle_node``.

Same parameters, topics and behaviour as ``completion_node`` (all of it lives in
:class:`~lrda_ros.ros.node.CompletionCore`), driven by transitions:

- configure: load the model, create the outputs (lifecycle publishers);
- activate: subscribe to the synchronized inputs, frames are processed;
- deactivate: unsubscribe and stop processing (a frame in progress is abandoned between
  optimization steps); the model stays loaded, so activate is instant;
- cleanup: stop the worker and free the model; shutdown: all of the above.

A failed configure (e.g. a model that cannot load) logs one line and returns FAILURE; the
node stays unconfigured and can be configured again after a parameter change. A failed
activate (e.g. a bad ``qos_overrides`` value) logs one line, leaves no input subscribed and
returns FAILURE: the node stays inactive. Any other exception in a transition leads to
``on_error``, which releases everything the node holds (inputs, worker, outputs, model, tf
listener) and leaves it unconfigured, so the next configure starts from nothing.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn

from .declaration import warn_unknown_parameters
from .node import CompletionCore, NODE_NAME
from .startup import run_node, startup_error_message


class CompletionLifecycleNode(CompletionCore, LifecycleNode):
    """The completion node, managed: model loaded on configure, inputs only while active."""

    def __init__(self, **node_options: Any) -> None:
        super().__init__(NODE_NAME, **node_options)
        self._declare()
        warn_unknown_parameters(self)

    def _lifecycle_state(self) -> str:
        """Return the state machine's current state label (what get_state answers)."""
        # rclpy offers the current state to Python only through its state machine.
        return self._state_machine.current_state[1]

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Load the model and create the outputs."""
        try:
            self._load(self.create_lifecycle_publisher)
        except Exception as error:  # reported as a failed transition, never a traceback
            self.get_logger().error(startup_error_message(error))
            self.get_logger().debug(traceback.format_exc())
            self._unload(self.destroy_lifecycle_publisher)
            return TransitionCallbackReturn.FAILURE
        self._log_started()
        return super().on_configure(state)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Subscribe to the inputs (FAILURE, none subscribed, if one cannot be)."""
        try:
            self._subscribe()
        except Exception as error:  # reported as a failed transition, never a traceback
            self.get_logger().error(f'cannot activate: {startup_error_message(error)}')
            self.get_logger().debug(traceback.format_exc())
            self._unsubscribe()
            return TransitionCallbackReturn.FAILURE
        self.get_logger().info(
            f'active; synchronization: {self.subscriptions_handle.backend}')
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Unsubscribe and stop processing; the model stays loaded."""
        self._unsubscribe()
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop the worker and free the model."""
        self._unload(self.destroy_lifecycle_publisher)
        return super().on_cleanup(state)

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release everything after an exception in a transition: SUCCESS is unconfigured."""
        self.get_logger().error(
            f'error in a transition from {state.label}: releasing the inputs, the worker and '
            'the model; the node is unconfigured')
        self._unsubscribe()
        self._unload(self.destroy_lifecycle_publisher)
        return super().on_error(state)

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release everything, from whichever state."""
        self._unsubscribe()
        self._unload(self.destroy_lifecycle_publisher)
        return super().on_shutdown(state)


def main(args: list[str] | None = None) -> int:
    """Run the managed node (unconfigured until a configure transition)."""
    return run_node(NODE_NAME, CompletionLifecycleNode, args)


if __name__ == '__main__':
    sys.exit(main())
