"""One cooperative round, from the members' reports to their answers and the leader's memory.

Happens-before is kept by one rule: an item is only ever *assigned* when no member of the
round reports running it. Anything that must move while running (balance, duplicates, a
member leaving for good) is revoked in this round and assigned in the next one, to the
member remembered as its hand-off target; the revoking member rejoins at once, so the
next round follows immediately.

From v3 on, a task that exactly one member reports is handed over in the round that
revokes it, marked `awaiting_release`: its new owner starts it once the old one has
released it (`worker.plugins.task_claims`), so the happens-before goes through the task's
checkpoint instead of a second round. Connectors and tasks reported twice still wait for
the next round.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from herder.assignor.memory import LeaderMemory, RevocationPacing, hold_ms
from herder.assignor.placement import LoadModel, TaskSets
from herder.assignor.replies import reply
from herder.assignor.reports import GroupReports, MemberReport
from herder.assignor.snapshot import GroupRound, HandedOver
from herder.assignor.triage import Triage, Verdict
from protocol.messages import Allocation, Assignment, ConnectorTaskId
from protocol.versions import SAME_ROUND_HAND_OVER_VERSION

_NOTHING: frozenset[int] = frozenset()


@dataclass
class _Outcome:
    """The answers of a round plus the facts the next round's memory is built from."""

    replies: dict[str, Assignment] = field(default_factory=dict)
    task_handoffs: dict[str, dict[int, str]] = field(default_factory=dict)
    connector_handoffs: dict[str, str] = field(default_factory=dict)
    balance_revocations: int = 0


class RoundPlanner:
    """Plans a single round; built fresh for each round so nothing leaks between rounds."""

    def __init__(
        self, round: GroupRound, memory: LeaderMemory, max_delay_ms: int, identity_aware: bool
    ) -> None:
        self._round = round
        self._memory = memory
        self._max_delay_ms = max_delay_ms
        self._identity_aware = identity_aware
        self._handed_over = {
            identity: handed
            for identity, handed in memory.handed_over.items()
            if round.now_ms < handed.until_ms
        }
        self._counts = round.snapshot.task_counts
        self._reports = GroupReports.of(round.members)
        self._eligible = [m for m in sorted(round.members) if not round.members[m].leaving]
        self._index = {member: i for i, member in enumerate(self._eligible)}
        self._model = LoadModel(self._eligible)
        self._model.weigh([round.members[m].load for m in self._eligible])
        self._triage = Triage(
            round.members,
            set(self._eligible),
            memory,
            round.now_ms,
            max_delay_ms,
            identity_aware,
        )
        self._free_tasks: dict[str, list[int]] = {}
        self._free_connectors: list[str] = []
        self._waiting_tasks: dict[str, dict[int, str]] = {}
        self._waiting_connectors: dict[str, str] = {}
        self._deadline_ms: int | None = None
        self._candidates: set[str] = set()
        self._delay_ms = 0

    def plan(self) -> tuple[dict[str, Assignment], LeaderMemory]:
        self._keep_running_work()
        self._release_work_of_leaving_members()
        self._triage_unreported_tasks()
        self._triage_unreported_connectors()
        self._resolve_wait()
        self._return_handed_over_work()
        self._model.place_tasks(self._free_tasks)
        self._model.place_connectors(self._free_connectors)
        pacing, balanced_now = self._balance()
        outcome = self._answer()
        if balanced_now:
            pacing.revoked_last_round = outcome.balance_revocations > 0
        return outcome.replies, self._remember(outcome, pacing)

    def _keep_running_work(self) -> None:
        duplicates = self._reports.duplicate_tasks
        counts = self._counts
        over_count = {
            connector
            for connector, numbers in self._reports.running_tasks.items()
            if connector in counts and max(numbers) >= counts[connector]
        }
        for i, member in enumerate(self._eligible):
            report = self._reports.by_member[member]
            kept: TaskSets = {}
            for connector, numbers in report.tasks.items():
                count = counts.get(connector)
                if count is None:
                    continue
                twice = duplicates.get(connector)
                keep = numbers
                if twice or connector in over_count:
                    keep = {t for t in numbers if t < count and not (twice and t in twice)}
                if keep:
                    kept[connector] = keep
            connectors = frozenset(
                c
                for c in report.connectors
                if c in self._counts and c not in self._reports.duplicate_connectors
            )
            self._model.keep(i, kept, connectors)

    def _release_work_of_leaving_members(self) -> None:
        """Work of a member leaving for good is re-placed now and handed over next round;
        the leader remembers it under the member's identity (see `HandedOver`)."""
        for member, report in self._reports.by_member.items():
            if member in self._index:
                continue
            released: dict[str, frozenset[int]] = {}
            for connector, numbers in report.tasks.items():
                count = self._counts.get(connector, 0)
                twice = self._reports.duplicate_tasks.get(connector, _NOTHING)
                free = [t for t in sorted(numbers) if t < count and t not in twice]
                if free:
                    self._free_tasks.setdefault(connector, []).extend(free)
                    released[connector] = frozenset(free)
            if released and self._identity_aware:
                self._handed_over[self._round.members[member].identity] = HandedOver(
                    self._round.now_ms + self._max_delay_ms, released
                )
            self._free_connectors.extend(
                c
                for c in sorted(report.connectors)
                if c in self._counts and c not in self._reports.duplicate_connectors
            )

    def _triage_unreported_tasks(self) -> None:
        running = self._reports.running_tasks
        missing = []
        for connector in sorted(self._counts):
            count = self._counts[connector]
            reported = running.get(connector, _NOTHING)
            if count and not (len(reported) == count and max(reported) == count - 1):
                missing.append(connector)
        holders_of = self._task_holders(missing)
        for connector in missing:
            reported = running.get(connector, _NOTHING)
            unreported = [t for t in range(self._counts[connector]) if t not in reported]
            holders = holders_of.get(connector, {})
            handoffs = self._memory.task_handoffs.get(connector, {})
            if not holders and not handoffs:
                # Tasks the leader knows nothing of all get the same verdict.
                verdict, member = self._triage.decide(False, None, None)
                self._triaged(connector, unreported, verdict, member)
                continue
            for task in unreported:
                verdict, member = self._triage.decide(
                    task in holders, holders.get(task), handoffs.get(task)
                )
                self._triaged(connector, [task], verdict, member)

    def _triaged(self, connector: str, tasks: list[int], verdict: Verdict, member: str) -> None:
        if verdict is Verdict.RETURN:
            for task in tasks:
                self._model.add_task(self._index[member], connector, task)
        elif verdict is Verdict.WAIT:
            self._waiting_tasks.setdefault(connector, {}).update(dict.fromkeys(tasks, member))
        else:
            self._free_tasks.setdefault(connector, []).extend(tasks)

    def _task_holders(self, connectors: list[str]) -> dict[str, dict[int, str | None]]:
        """Who the leader remembers running each task of these connectors, by connector."""
        lost = self._memory.lost_tasks
        holders = {c: dict(lost[c]) for c in connectors if c in lost}
        wanted = set(connectors)
        for member, tasks in self._memory.held_tasks.items():
            for connector in wanted.intersection(tasks):
                holders.setdefault(connector, {}).update(dict.fromkeys(tasks[connector], member))
        return holders

    def _triage_unreported_connectors(self) -> None:
        missing = [c for c in sorted(self._counts) if c not in self._reports.running_connectors]
        if not missing:
            return
        holders = dict(self._memory.lost_connectors)
        for member, connectors in self._memory.held_connectors.items():
            holders.update(dict.fromkeys(connectors, member))
        for connector in missing:
            verdict, member = self._triage.decide(
                connector in holders,
                holders.get(connector),
                self._memory.connector_handoffs.get(connector),
            )
            if verdict is Verdict.RETURN:
                self._model.add_connector(self._index[member], connector)
            elif verdict is Verdict.WAIT:
                self._waiting_connectors[connector] = member
            else:
                self._free_connectors.append(connector)

    def _resolve_wait(self) -> None:
        """Start, keep or end the scheduled-rebalance delay for lost work.

        The deadline is set by the first loss only, so later losses never extend it; when
        it passes, lost work is placed by load with the candidates winning ties.
        """
        if not self._waiting_tasks and not self._waiting_connectors:
            return
        now = self._round.now_ms
        deadline = self._memory.deadline_ms
        if deadline is None:
            deadline = now + self._max_delay_ms
        if now >= deadline:
            for connector, waiting in self._waiting_tasks.items():
                self._free_tasks.setdefault(connector, []).extend(waiting)
            self._free_connectors.extend(self._waiting_connectors)
            self._waiting_tasks, self._waiting_connectors = {}, {}
            self._model.prefer(
                self._index[m] for m in sorted(self._memory.candidates) if m in self._index
            )
            return
        model = self._model
        self._deadline_ms = deadline
        self._delay_ms = deadline - now
        self._candidates = set(self._memory.candidates)
        self._candidates.update(
            m
            for i, m in enumerate(self._eligible)
            if not model.totals[i] and not model.connectors[i]
        )

    def _return_handed_over_work(self) -> None:
        """A member back under the identity of one that handed its tasks over gets those
        tasks back, wherever they run now (revoked there this round, handed back next).

        So a rolling bounce stops each task twice, once to hand it over and once to hand
        it back, and a task never follows its temporary owner when that one is bounced
        in turn. Tasks gone from the config, or already back, are dropped; balancing
        afterwards evens out whatever the config changed meanwhile.
        """
        if not self._handed_over:
            return
        back = {self._round.members[member].identity: i for i, member in enumerate(self._eligible)}
        model = self._model
        for identity in sorted(self._handed_over.keys() & back.keys()):
            home = back[identity]
            for connector, numbers in sorted(self._handed_over.pop(identity).tasks.items()):
                free = self._free_tasks.get(connector, [])
                for task in sorted(numbers):
                    if task >= self._counts.get(connector, 0):
                        continue
                    if task in free:
                        free.remove(task)
                        model.add_task(home, connector, task)
                        continue
                    holders = model.holders.get(connector, {})
                    holder = next(
                        (w for w in holders if task in model.tasks[w].get(connector, _NOTHING)),
                        None,
                    )
                    if holder is not None and holder != home:
                        model.remove_task(holder, connector, task)
                        model.add_task(home, connector, task)

    def _balance(self) -> tuple[RevocationPacing, bool]:
        """Revoke for balance only when no delay is active and consecutive revoking rounds
        have waited out their exponential hold."""
        pacing = RevocationPacing(**vars(self._memory.pacing))
        now = self._round.now_ms
        if self._deadline_ms is not None:
            pacing.revoked_last_round = False
            return pacing, False
        if self._model.is_balanced():
            return RevocationPacing(), False
        if pacing.hold_until_ms is not None and now < pacing.hold_until_ms:
            self._delay_ms = pacing.hold_until_ms - now
            return pacing, False
        if pacing.revoked_last_round and pacing.hold_until_ms is None:
            hold = hold_ms(pacing.streak + 1, self._max_delay_ms)
            if hold > 0:
                pacing.streak += 1
                pacing.hold_until_ms = now + hold
                self._delay_ms = hold
                return pacing, False
        self._model.balance()
        pacing.hold_until_ms = None
        return pacing, True

    def _answer(self) -> _Outcome:
        outcome = _Outcome()
        for member in sorted(self._round.members):
            report = self._reports.by_member[member]
            if member in self._index:
                outcome.replies[member] = self._answer_member(member, report, outcome)
            else:
                revoked = Allocation(
                    report.connectors,
                    self._round.members[member].allocation.tasks,
                )
                outcome.replies[member] = reply(
                    self._round, revoked=revoked, delay_ms=self._delay_ms
                )
        return outcome

    def _answer_member(self, member: str, report: MemberReport, outcome: _Outcome) -> Assignment:
        i = self._index[member]
        final = self._model.tasks[i]
        busy_tasks = self._reports.running_tasks
        hand_over_now = self._round.version >= SAME_ROUND_HAND_OVER_VERSION
        assigned: list[ConnectorTaskId] = []
        awaiting: list[ConnectorTaskId] = []
        for connector, numbers in final.items():
            reported = report.tasks.get(connector)
            if reported is not None and numbers == reported:
                continue
            fresh = numbers - reported if reported else numbers
            busy = busy_tasks.get(connector, _NOTHING)
            twice = self._reports.duplicate_tasks.get(connector, _NOTHING)
            for task in fresh:
                if task not in busy:
                    assigned.append(ConnectorTaskId(connector, task))
                elif hand_over_now and task not in twice:
                    assigned.append(ConnectorTaskId(connector, task))
                    awaiting.append(ConnectorTaskId(connector, task))
                else:
                    outcome.task_handoffs.setdefault(connector, {})[task] = member
        revoked: list[ConnectorTaskId] = []
        for connector, reported in report.tasks.items():
            remaining = final.get(connector)
            if remaining is not None and remaining == reported:
                continue
            gone = reported - remaining if remaining else reported
            count = self._counts.get(connector, 0)
            twice = self._reports.duplicate_tasks.get(connector, _NOTHING)
            for task in gone:
                revoked.append(ConnectorTaskId(connector, task))
                if task < count and task not in twice:
                    outcome.balance_revocations += 1
        connectors = self._model.connectors[i]
        for connector in connectors - report.connectors:
            if connector in self._reports.running_connectors and connector not in report.connectors:
                outcome.connector_handoffs[connector] = member
        new_connectors = connectors - report.connectors - self._reports.running_connectors
        lost_connectors = report.connectors - connectors
        outcome.balance_revocations += sum(
            1
            for c in lost_connectors
            if c in self._counts and c not in self._reports.duplicate_connectors
        )
        return reply(
            self._round,
            assigned=Allocation(frozenset(new_connectors), frozenset(assigned)),
            revoked=Allocation(frozenset(lost_connectors), frozenset(revoked)),
            delay_ms=self._delay_ms,
            awaiting_release=Allocation(tasks=frozenset(awaiting)),
        )

    def _remember(self, outcome: _Outcome, pacing: RevocationPacing) -> LeaderMemory:
        identities = {m: s.identity for m, s in self._round.members.items()}
        departed = set(self._waiting_connectors.values())
        for waiting in self._waiting_tasks.values():
            departed.update(waiting.values())
        for holder in departed - identities.keys():
            if holder in self._memory.identities:
                identities[holder] = self._memory.identities[holder]
        return LeaderMemory(
            knows_round=True,
            held_tasks={m: self._model.tasks[i] for m, i in self._index.items()},
            held_connectors={m: self._model.connectors[i] for m, i in self._index.items()},
            lost_tasks={
                connector: {task: holder or None for task, holder in waiting.items()}
                for connector, waiting in self._waiting_tasks.items()
            },
            lost_connectors={c: h or None for c, h in self._waiting_connectors.items()},
            task_handoffs=outcome.task_handoffs,
            connector_handoffs=outcome.connector_handoffs,
            identities=identities,
            deadline_ms=self._deadline_ms,
            candidates=self._candidates,
            pacing=pacing,
            handed_over=self._handed_over,
        )
