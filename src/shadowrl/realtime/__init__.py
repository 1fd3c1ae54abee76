"""Real-time RL: production sessions and feedback → rewards → train → gate → deploy or roll back.

The cycle is `cycle.py` (`run_cycles`); its stages are `stages.py`, their typed results
and the measurement seam `context.py`. Other packages import from here, never from its
modules. Names are imported on first use (`shadowrl.lazy`), so loading the config tree,
which reads `realtime.config`, imports no torch.
"""

from typing import TYPE_CHECKING

from shadowrl.lazy import exports

if TYPE_CHECKING:
    from shadowrl.realtime.branch_stage import build_brancher as build_brancher
    from shadowrl.realtime.branch_view import Branches as Branches
    from shadowrl.realtime.branch_view import SessionBrancher as SessionBrancher
    from shadowrl.realtime.branch_view import branches as branches
    from shadowrl.realtime.branch_view import rebuilt as rebuilt
    from shadowrl.realtime.branch_view import recorded_version as recorded_version
    from shadowrl.realtime.context import Brancher as Brancher
    from shadowrl.realtime.context import Ctx as Ctx
    from shadowrl.realtime.context import CycleState as CycleState
    from shadowrl.realtime.context import Deps as Deps
    from shadowrl.realtime.cycle import run_cycles as run_cycles
    from shadowrl.realtime.grow import Found as Found
    from shadowrl.realtime.grow import SuppliedTests as SuppliedTests
    from shadowrl.realtime.grow import grow_suite as grow_suite
    from shadowrl.realtime.judge import SessionTests as SessionTests
    from shadowrl.realtime.judges import Judged as Judged
    from shadowrl.realtime.judges import UserModel as UserModel
    from shadowrl.realtime.judges import Work as Work
    from shadowrl.realtime.mix import mix_tasks as mix_tasks
    from shadowrl.realtime.process import TOKEN_FILE as TOKEN_FILE
    from shadowrl.realtime.process import ServerError as ServerError
    from shadowrl.realtime.process import ServerProcess as ServerProcess
    from shadowrl.realtime.process import read_admin_token as read_admin_token
    from shadowrl.realtime.process import run_admin_token as run_admin_token
    from shadowrl.realtime.rebuild import NotReplayable as NotReplayable
    from shadowrl.realtime.rebuild import Rebuilt as Rebuilt
    from shadowrl.realtime.rebuild import Unfaithful as Unfaithful
    from shadowrl.realtime.rebuild import agent_record as agent_record
    from shadowrl.realtime.rebuild import request_chain as request_chain
    from shadowrl.realtime.rebuild import request_segment as request_segment
    from shadowrl.realtime.rebuild import served_agent_config as served_agent_config
    from shadowrl.realtime.record import CycleRow as CycleRow
    from shadowrl.realtime.record import read_cycles as read_cycles
    from shadowrl.realtime.rewards import Reward as Reward
    from shadowrl.realtime.rewards import RewardConfig as RewardConfig
    from shadowrl.realtime.rewards import Signal as Signal
    from shadowrl.realtime.rows import RowCounts as RowCounts
    from shadowrl.realtime.rows import cohort_key as cohort_key
    from shadowrl.realtime.sessions import ProductionSession as ProductionSession
    from shadowrl.realtime.stages import cycle_sessions as cycle_sessions
    from shadowrl.realtime.stages import need as need
    from shadowrl.realtime.training import Arm as Arm
    from shadowrl.realtime.training import ArmResult as ArmResult
    from shadowrl.realtime.training import TrainInput as TrainInput
    from shadowrl.realtime.training import train_arm as train_arm

_WHERE = {
    "build_brancher": "branch_stage",
    "Branches": "branch_view",
    "SessionBrancher": "branch_view",
    "branches": "branch_view",
    "rebuilt": "branch_view",
    "recorded_version": "branch_view",
    "Brancher": "context",
    "Ctx": "context",
    "CycleState": "context",
    "Deps": "context",
    "run_cycles": "cycle",
    "Found": "grow",
    "SuppliedTests": "grow",
    "grow_suite": "grow",
    "SessionTests": "judge",
    "Judged": "judges",
    "UserModel": "judges",
    "Work": "judges",
    "mix_tasks": "mix",
    "ServerError": "process",
    "ServerProcess": "process",
    "TOKEN_FILE": "process",
    "read_admin_token": "process",
    "run_admin_token": "process",
    "NotReplayable": "rebuild",
    "Rebuilt": "rebuild",
    "Unfaithful": "rebuild",
    "agent_record": "rebuild",
    "request_chain": "rebuild",
    "request_segment": "rebuild",
    "served_agent_config": "rebuild",
    "CycleRow": "record",
    "read_cycles": "record",
    "Reward": "rewards",
    "RewardConfig": "rewards",
    "Signal": "rewards",
    "RowCounts": "rows",
    "cohort_key": "rows",
    "ProductionSession": "sessions",
    "cycle_sessions": "stages",
    "need": "stages",
    "Arm": "training",
    "ArmResult": "training",
    "TrainInput": "training",
    "train_arm": "training",
}
if not TYPE_CHECKING:
    __getattr__ = exports(__name__, _WHERE)
