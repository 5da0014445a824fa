"""The turn pipeline: one node per module, each taking and returning a ``TurnState``."""

from conversation.pipeline.runner import run_turn
from conversation.pipeline.state import TurnResult, TurnState

__all__ = ["TurnResult", "TurnState", "run_turn"]
