"""Whole groups of simulated workers: probing during rolling upgrades, eager downgrades.

Each worker encodes with the codec of its release (3 = a simulated next release), the
leader plans with `plan_versions`, and each member decodes its assignment with its own
codec and reacts with `next_version_after` / `must_release_for_eager`, as the herder will.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from protocol.codec import Codec
from protocol.messages import (
    EMPTY_ALLOCATION,
    Allocation,
    Assignment,
    AssignmentError,
    ConnectorTaskId,
    Subscription,
)
from protocol.negotiation import (
    LeaderInfo,
    VersionPlan,
    must_release_for_eager,
    next_version_after,
    plan_versions,
)
from protocol.versions import ConnectProtocol, is_cooperative, max_version_for
from tests.unit.protocol.samples import FUTURE_VERSION, codec_of_release


@dataclass
class Worker:
    name: str
    release: int
    mode: ConnectProtocol = ConnectProtocol.COMPATIBLE
    used: int = field(init=False)
    running: Allocation = EMPTY_ALLOCATION
    last_version: int | None = None

    def __post_init__(self) -> None:
        self.used = self.own_max

    @property
    def own_max(self) -> int:
        return max_version_for(self.mode, self.release)

    @property
    def codec(self) -> Codec:
        return codec_of_release(self.release)

    def join(self) -> bytes:
        """An eager member stops everything before it joins; a cooperative one keeps it."""
        if self.last_version is not None and not is_cooperative(self.last_version):
            self.running = EMPTY_ALLOCATION
        allocation = self.running if is_cooperative(self.used) else EMPTY_ALLOCATION
        sub = Subscription(self.used, self.own_max, self.name, f"http://{self.name}", 0, allocation)
        return self.codec.encode_subscription(sub)

    def receive(self, data: bytes) -> bool:
        """Apply an assignment; True when the worker must rejoin at once."""
        answer = self.codec.decode_assignment(data)
        rejoin = False
        if must_release_for_eager(answer, self.running):
            self.running, rejoin = EMPTY_ALLOCATION, True
        elif answer.failed:
            rejoin = True
        elif is_cooperative(answer.version):
            self.running = self.running.minus(answer.revoked).union(answer.assigned)
            rejoin = not answer.revoked.is_empty()
        else:
            self.running = answer.assigned
        if not answer.failed:
            self.last_version = answer.version
        change = next_version_after(answer, self.used, self.own_max)
        if change is not None:
            self.used = change
        return rejoin or change is not None


@dataclass(frozen=True)
class Round:
    plan: VersionPlan
    errors: dict[str, AssignmentError]
    rejoining: frozenset[str]


class Group:
    def __init__(self, *workers: Worker) -> None:
        self.workers = {worker.name: worker for worker in workers}
        self.leader = workers[0].name

    def bounce(self, name: str, release: int) -> None:
        """Restart a worker on another release: it comes back running nothing."""
        self.workers[name] = Worker(name, release, self.workers[name].mode)

    def rebalance(self) -> Round:
        leader = self.workers[self.leader]
        metadata = {name: worker.join() for name, worker in self.workers.items()}
        plan = plan_versions(metadata, leader.own_max, leader.codec)
        info = LeaderInfo(self.leader, f"http://{self.leader}", 0)
        answers = plan.rejections(info)
        for name in plan.subscriptions:
            answers[name] = self._work_for(plan, name, info)
        rejoining = {
            name
            for name, answer in answers.items()
            if self.workers[name].receive(leader.codec.encode_assignment(answer))
        }
        errors = {name: answer.error for name, answer in answers.items() if answer.failed}
        return Round(plan, errors, frozenset(rejoining))

    def settle(self, max_rounds: int = 6) -> list[Round]:
        rounds = [self.rebalance()]
        while rounds[-1].rejoining:
            assert len(rounds) < max_rounds, "the group does not settle"
            rounds.append(self.rebalance())
        return rounds

    def _work_for(self, plan: VersionPlan, name: str, info: LeaderInfo) -> Assignment:
        """One task per member, named after it; incremental from v1 on."""
        if plan.requires_empty_eager_round:
            return plan.empty_assignment(info)
        wanted = Allocation.of(tasks=[ConnectorTaskId("conn", sorted(self.workers).index(name))])
        running = plan.subscriptions[name].allocation
        answer = plan.empty_assignment(info)
        if not is_cooperative(plan.group_version):
            return replace(answer, assigned=wanted)
        revoked = running.minus(wanted)
        if not revoked.is_empty():
            return replace(answer, revoked=revoked)
        return replace(answer, assigned=wanted.minus(running))

    def versions_used(self) -> dict[str, int]:
        return {name: worker.used for name, worker in self.workers.items()}

    def all_running(self) -> bool:
        return all(not worker.running.is_empty() for worker in self.workers.values())


def probes_only(rounds: list[Round]) -> bool:
    return all(
        error is AssignmentError.VERSION_PROBE for r in rounds for error in r.errors.values()
    )


def test_members_ahead_of_the_leader_converge_on_its_version_then_follow_its_upgrade() -> None:
    group = Group(Worker("leader", 2), *(Worker(f"w{i}", FUTURE_VERSION) for i in range(3)))

    rounds = group.settle()

    assert len(rounds) == 2
    assert set(rounds[0].errors) == {"w0", "w1", "w2"}
    assert probes_only(rounds) and not rounds[-1].errors
    assert set(group.versions_used().values()) == {2}
    assert rounds[-1].plan.group_version == 2
    assert group.all_running()

    group.bounce("leader", FUTURE_VERSION)
    rounds = group.settle()

    assert len(rounds) == 2, "a leader bounced last costs exactly one extra rebalance"
    assert not any(r.errors for r in rounds)
    assert [r.plan.group_version for r in rounds] == [FUTURE_VERSION, FUTURE_VERSION]
    assert set(group.versions_used().values()) == {FUTURE_VERSION}
    assert group.all_running()


def test_a_rolling_bounce_with_the_leader_last_upgrades_without_configuration() -> None:
    names = ["leader", "w0", "w1", "w2"]
    group = Group(*(Worker(name, 2) for name in names))
    group.settle()

    for name in names[1:]:
        group.bounce(name, FUTURE_VERSION)
        rounds = group.settle()
        assert probes_only(rounds)
        assert rounds[-1].plan.group_version == 2
        assert group.all_running()
    group.bounce("leader", FUTURE_VERSION)
    rounds = group.settle()

    assert rounds[-1].plan.group_version == FUTURE_VERSION
    assert set(group.versions_used().values()) == {FUTURE_VERSION}


def test_with_the_leader_upgraded_first_the_group_moves_up_with_the_last_member() -> None:
    group = Group(Worker("leader", FUTURE_VERSION), Worker("w0", 2), Worker("w1", 2))
    assert group.settle()[-1].plan.group_version == 2

    group.bounce("w0", FUTURE_VERSION)
    first = group.settle()
    group.bounce("w1", FUTURE_VERSION)
    second = group.settle()

    assert not any(r.errors for r in first + second)
    assert first[-1].plan.group_version == 2
    assert [r.plan.group_version for r in second] == [FUTURE_VERSION]


def test_one_eager_worker_downgrades_the_group_with_one_double_rebalance() -> None:
    group = Group(*(Worker(f"w{i}", 2) for i in range(3)))
    group.settle()
    assert group.all_running()

    group.workers["eager"] = Worker("eager", 2, ConnectProtocol.EAGER)
    rounds = group.settle()

    assert [r.plan.group_version for r in rounds] == [0, 0]
    assert rounds[0].plan.requires_empty_eager_round
    assert rounds[0].rejoining == {"w0", "w1", "w2"}
    assert not rounds[1].plan.requires_empty_eager_round
    assert group.all_running()

    again = group.settle()
    assert len(again) == 1 and not again[0].plan.requires_empty_eager_round

    del group.workers["eager"]
    back = group.settle()
    assert back[-1].plan.group_version == 2
    assert group.all_running()
