"""One member's side of Kafka's group membership protocol, over aiokafka's client.

Kafka Connect's workers are not consumers: they use the group coordinator only to agree
on a leader and a generation, and put their own protocol in the member metadata. So this
drives JoinGroup/SyncGroup/Heartbeat/LeaveGroup directly, with protocol type `connect`
and one protocol name (versions are negotiated inside the metadata, see `protocol/`).
What each error code means for the member is `herder.member.group_errors.reaction`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

from aiokafka.client import AIOKafkaClient, ConnectionGroup, CoordinationType
from aiokafka.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaError,
)
from aiokafka.protocol.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)

from herder.member.group_errors import (
    INCONSISTENT_GROUP_PROTOCOL,
    MemberId,
    Reaction,
    Request,
    Verdict,
    reaction,
    round_backoff_s,
)
from herder.member.kafka_login import login_refusal
from herder.member.membership import (
    CoordinatorUnavailable,
    Generation,
    HeartbeatOutcome,
    JoinedMembers,
    LeaderCallback,
    MembershipError,
    Subscribe,
)
from herder.member.static_probe import (
    PROBE_SESSION_TIMEOUT_MS,
    STATIC_PROBE_GROUP_INFIX,
    changed_subscription_rebalances,
)
from herder.member.sync_grace import join_hold_s
from worker.kafka.security import PLAINTEXT_CLIENT, KafkaClientSecurity

log = logging.getLogger(__name__)

PROTOCOL_TYPE = "connect"
COORDINATOR_NOT_READY = (CoordinatorNotAvailableError, CoordinatorLoadInProgressError)
HEARTBEAT_OUTCOMES = {
    Verdict.DONE: HeartbeatOutcome.OK,
    Verdict.REJOIN: HeartbeatOutcome.REJOIN,
    Verdict.MEMBER_LOST: HeartbeatOutcome.MEMBER_LOST,
}


class GroupMember:
    """Joins one group as one member; the caller owns the loop and when to call what."""

    def __init__(
        self,
        bootstrap_servers: str,
        group_id: str,
        protocol_name: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        instance_id: str | None = None,
        retry_backoff_s: float = 0.5,
        security: KafkaClientSecurity = PLAINTEXT_CLIENT,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = lambda: random.uniform(0.8, 1.2),
    ) -> None:
        self._group_id = group_id
        self._protocol_name = protocol_name
        self._session_timeout_ms = session_timeout_ms
        self._rebalance_timeout_ms = rebalance_timeout_ms
        self._instance_id = instance_id
        self._retry_backoff_s = retry_backoff_s
        self._bootstrap_servers = bootstrap_servers
        self._security = security
        self._client = AIOKafkaClient(
            bootstrap_servers=bootstrap_servers,
            request_timeout_ms=rebalance_timeout_ms + 5000,
            client_id=f"sparkherd-{group_id}",
            **security.aiokafka_options(),
        )
        self._coordinator: int | None = None
        self._clock = clock
        self._jitter = jitter
        self._failing_rounds = 0
        self._failed_rounds = 0
        self._last_round_error = ""
        self._pause_s = 0.0
        self._last_response_at = clock()
        self._join_sent_at: float | None = None
        self._rebalance_noticed_at: float | None = None
        self._shared_round_synced_at: float | None = None
        """When this member's SyncGroup of a round with other members was answered."""
        self._unreachable = False
        self.member_id = ""
        self._leader_id = ""
        self.generation = -1

    @property
    def failing_rounds(self) -> int:
        return self._failing_rounds

    @property
    def failed_rounds(self) -> int:
        return self._failed_rounds

    @property
    def last_round_error(self) -> str:
        return self._last_round_error

    @property
    def is_static(self) -> bool:
        return self._instance_id is not None

    def join_as_dynamic(self) -> None:
        self._instance_id = None

    async def static_rejoin_honoured(self) -> bool:
        """Asked once, before the first join, in a throwaway group of its own (this
        worker's group sees nothing of it): join as a static member, join again with
        another subscription, and see whether that made a new generation, as KIP-345
        has it. Tansu answers with the current generation instead, so a changed
        subscription (new work, revocations done) never reaches the leader, and the
        rounds forced to get past that kept a rolling bounce from ever settling."""
        token = secrets.token_hex(4)
        probe = GroupMember(
            self._bootstrap_servers,
            f"{self._group_id}{STATIC_PROBE_GROUP_INFIX}{token}",
            self._protocol_name,
            min(self._session_timeout_ms, PROBE_SESSION_TIMEOUT_MS),
            self._rebalance_timeout_ms,
            instance_id=f"probe-{token}",
            retry_backoff_s=self._retry_backoff_s,
            security=self._security,
            clock=self._clock,
            jitter=self._jitter,
        )
        return await changed_subscription_rebalances(probe)

    def must_fence(self, margin_s: float) -> bool:
        """Whether the coordinator may hand this member's work on within `margin_s`.

        It evicts a member whose session expires: no answered request for
        `session.timeout.ms`. Only a coordinator that cannot be reached counts as silent
        (Connect's KAFKA-9184 rule): a coordinator may hold a request unanswered while a
        join phase runs, and the heartbeat's own time-out turns a request that never
        returns into "unreachable". Once a rebalance has begun (a JoinGroup on its way, or
        a heartbeat answered that one is in progress), the coordinator waits up to
        `rebalance.timeout.ms` for this member instead.
        """
        now = self._clock()
        if self._unreachable:
            return now >= self._last_response_at + self._session_timeout_ms / 1000 - margin_s
        started = self._join_sent_at or self._rebalance_noticed_at
        if started is not None:
            return now >= started + self._rebalance_timeout_ms / 1000 - margin_s
        return False

    async def start(self) -> None:
        try:
            await self._client.bootstrap()
        except KafkaConnectionError as exc:
            await self._client.close()
            refusal = await login_refusal(self._bootstrap_servers, self._security)
            if refusal is not None:
                raise MembershipError(refusal) from exc
            raise CoordinatorUnavailable(str(exc)) from exc

    async def close(self) -> None:
        await self._client.close()

    async def join(
        self,
        subscribe: Subscribe,
        on_leader: LeaderCallback,
        on_leader_sync_failed: Callable[[], None] = lambda: None,
    ) -> Generation:
        """Join (or rejoin) the group and return this member's assignment for the new generation.

        Retries what the coordinator answers as transient (member id required, rebalance
        in progress, coordinator moved). A lost connection raises `CoordinatorUnavailable`
        so the caller can decide when its work must be fenced; configuration errors raise
        `MembershipError`.
        """
        await asyncio.sleep(join_hold_s(self._clock(), self._shared_round_synced_at))
        while True:
            metadata = await subscribe()
            try:
                members = await self._join_round(metadata)
                if members is None:
                    continue
                assignments: Mapping[str, bytes] = {}
                if members.leader_id == self.member_id:
                    assignments = await on_leader(members)
                assignment = await self._sync_round(members.generation, assignments)
            except CoordinatorUnavailable:
                await asyncio.sleep(self._retry_backoff_s)
                raise
            if assignment is None and members.leader_id == self.member_id:
                on_leader_sync_failed()
            if assignment is None:
                await asyncio.sleep(self._pause_s)
            if assignment is not None:
                shared = members.leader_id != self.member_id or len(members.metadata) > 1
                self._shared_round_synced_at = self._clock() if shared else None
                self._failing_rounds = 0
                self._rebalance_noticed_at = None
                self.generation = members.generation
                self._leader_id = members.leader_id
                return Generation(
                    members.generation, self.member_id, members.leader_id, assignment, metadata
                )

    async def heartbeat(self) -> HeartbeatOutcome:
        request = HeartbeatRequest(self._group_id, self.generation, self.member_id)
        try:
            async with asyncio.timeout(self._session_timeout_ms / 1000):
                response = await self._send(request)
        except TimeoutError:
            self._unreachable = True
            return HeartbeatOutcome.REJOIN
        except CoordinatorUnavailable:
            return HeartbeatOutcome.REJOIN
        code = response.error_code
        reacted = reaction(Request.HEARTBEAT, code)
        if reacted.rebalance_started and self._rebalance_noticed_at is None:
            self._rebalance_noticed_at = self._clock()
        if reacted.member_id is MemberId.FORGET:
            self.member_id = ""
        if reacted.unexpected:
            log.warning("heartbeat answered error %d; rejoining", code)
        return HEARTBEAT_OUTCOMES[reacted.verdict]

    async def leave(self) -> None:
        """Leave the group now so the others rebalance without waiting for our session to
        expire; a leader caught in a rebalance lets its session expire instead.

        Tansu keeps the leader of a forming generation when that leader leaves, so every
        later generation names a member that is gone and no SyncGroup ever succeeds; an
        expired leader, in contrast, is replaced. Kafka copes with either way out.

        Leaving starts the next generation by itself, so a join after it is not held
        (`sync_grace`): a static member that leaves to force a round would otherwise
        miss that round, and a leader's tasks would go to the others.
        """
        if not self.member_id:
            return
        if self.member_id == self._leader_id and await self._rebalancing():
            log.info(
                "leaving by session expiry (%d ms): the group is rebalancing and this worker "
                "leads it",
                self._session_timeout_ms,
            )
        else:
            try:
                await self._send(LeaveGroupRequest(self._group_id, self.member_id))
            except (CoordinatorUnavailable, KafkaError) as exc:
                log.warning("could not leave the group cleanly: %s", exc)
        self.member_id = ""
        self._leader_id = ""
        self.generation = -1
        self._shared_round_synced_at = None

    async def _rebalancing(self) -> bool:
        return await self.heartbeat() is not HeartbeatOutcome.OK

    async def _join_round(self, metadata: bytes) -> JoinedMembers | None:
        request = JoinGroupRequest(
            self._group_id,
            self._session_timeout_ms,
            self._rebalance_timeout_ms,
            self.member_id,
            self._instance_id,
            PROTOCOL_TYPE,
            [(self._protocol_name, metadata)],
        )
        self._join_sent_at = self._clock()
        try:
            response = await self._send(request)
        finally:
            self._join_sent_at = None
        code = response.error_code
        reacted = reaction(Request.JOIN, code)
        if reacted.verdict is Verdict.DONE:
            self.member_id = response.member_id
            log.debug(
                "JoinGroup: generation %d, %d members, leader %s, me %s",
                response.generation_id,
                len(response.members),
                response.leader_id,
                self.member_id,
            )
            return JoinedMembers(
                generation=response.generation_id,
                leader_id=response.leader_id,
                metadata={m[0]: m[-1] for m in response.members},
                instance_ids={m[0]: (m[1] if len(m) > 2 else None) for m in response.members},
            )
        if reacted.verdict is Verdict.FATAL:
            raise MembershipError(self._refusal(code))
        self._follow(reacted, response.member_id)
        if reacted.verdict is Verdict.FAILED_ROUND:
            self._round_failed(code, Request.JOIN)
            await asyncio.sleep(max(self._retry_backoff_s, self._pause_s))
        return None

    def _refusal(self, code: int) -> str:
        if code == INCONSISTENT_GROUP_PROTOCOL:
            return (
                f"group {self._group_id!r} runs a different protocol than {self._protocol_name!r}"
                f" ({PROTOCOL_TYPE}); is another application using this group.id?"
            )
        return f"group.instance.id {self._instance_id!r} is in use by another running worker"

    def _follow(self, reacted: Reaction, offered_id: str) -> None:
        if reacted.member_id is MemberId.TAKE:
            self.member_id = offered_id
        elif reacted.member_id is MemberId.FORGET:
            self.member_id = ""
        if reacted.forget_coordinator:
            self._coordinator = None

    async def _sync_round(self, generation: int, assignments: Mapping[str, bytes]) -> bytes | None:
        request = SyncGroupRequest(
            self._group_id, generation, self.member_id, self._instance_id, list(assignments.items())
        )
        response = await self._send(request)
        reacted = reaction(Request.SYNC, response.error_code)
        if reacted.verdict is Verdict.DONE:
            return bytes(response.member_assignment)
        self._follow(reacted, self.member_id)
        self._round_failed(response.error_code, Request.SYNC)
        return None

    async def _find_coordinator(self) -> int:
        """The group's coordinator node. A broker that answers "not available yet" or
        "loading" is reachable and busy: Apache Kafka answers so while it creates or loads
        `__consumer_offsets`, e.g. for the first group on a new cluster. That is retried
        for up to `rebalance.timeout.ms`; only then, or on a connection fault, is the
        coordinator unavailable."""
        deadline = self._clock() + self._rebalance_timeout_ms / 1000
        while True:
            try:
                node: int = await self._client.coordinator_lookup(
                    CoordinationType.GROUP, self._group_id
                )
                return node
            except COORDINATOR_NOT_READY as exc:
                if self._clock() >= deadline:
                    raise
                log.info("group coordinator not ready (%s); retrying", exc)
                await asyncio.sleep(self._retry_backoff_s)

    def _round_failed(self, code: int, request: Request) -> None:
        """A failed round: counted, and retried after `_pause_s` (`round_backoff_s`)."""
        what = request.value
        self._failing_rounds += 1
        self._failed_rounds += 1
        self._last_round_error = f"{what} answered error {code}"
        self._pause_s = round_backoff_s(self._failing_rounds, self._retry_backoff_s, self._jitter())
        if self._pause_s:
            log.info("%s answered error %d; retrying in %.1f s", what, code, self._pause_s)
        else:
            log.info("%s answered error %d; retrying", what, code)

    async def _send(self, request: object) -> Any:
        """Send to the coordinator (found first); connection faults -> CoordinatorUnavailable."""
        try:
            if self._coordinator is None:
                self._coordinator = await self._find_coordinator()
            response = await self._client.send(
                self._coordinator, request, group=ConnectionGroup.COORDINATION
            )
        except KafkaError as exc:
            self._coordinator = None
            self._unreachable = True
            raise CoordinatorUnavailable(f"group coordinator unreachable: {exc}") from exc
        self._last_response_at = self._clock()
        self._unreachable = False
        return response
