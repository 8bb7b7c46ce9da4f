"""Who owns each active task right now (KIP-341): when several clients claim a task, the claim from the
highest generation wins; equal generations are settled by process id so every leader agrees."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from streams_rt.protocol import TaskId

NO_OWNER = -1


def resolve_owners(
    claims: Sequence[Mapping[TaskId, int]], task_number: Mapping[TaskId, int]
) -> tuple[list[int], list[list[TaskId]]]:
    """claims[c] is client c's owned_active (task -> generation), clients indexed in process-id order;
    task_number maps every current task to its number.

    Returns the valid owner of every task (NO_OWNER when unclaimed) and, per client, the claims that were
    ignored: stale generations, losers of a tie, and tasks that no longer exist. Those clients must give
    the tasks up, but the tasks may go to someone else at once: the stale owner was already fenced."""
    owner = [NO_OWNER] * len(task_number)
    owner_gen = [0] * len(task_number)
    ignored: list[list[TaskId]] = [[] for _ in claims]
    get = task_number.get
    for c, owned in enumerate(claims):
        for task, generation in owned.items():
            t = get(task)
            if t is None:
                ignored[c].append(task)
                continue
            prev = owner[t]
            if prev == NO_OWNER:
                owner[t], owner_gen[t] = c, generation
            elif generation > owner_gen[t]:
                ignored[prev].append(task)
                owner[t], owner_gen[t] = c, generation
            else:  # older, or equal and the earlier process id already holds it
                ignored[c].append(task)
    return owner, ignored
