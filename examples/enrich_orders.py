"""Orders enriched with their customer's name: a stream-table join (orders keyed by customer id,
customers as a table).

    python examples/enrich_orders.py [--seconds N] [--bootstrap HOST:PORT]"""

from __future__ import annotations

import itertools
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streams_rt.topology import Serdes, StreamsBuilder, Topology

CUSTOMERS = {f"c{i}": name for i, name in enumerate(["Ada", "Grace", "Alan", "Edsger", "Barbara", "Ken"])}


def topology(orders: str = "orders", customers: str = "customers", enriched: str = "enriched-orders") -> Topology:
    builder = StreamsBuilder()
    names = builder.table(customers, Serdes.string(), Serdes.string(), store="customers")
    joined = builder.stream(orders, Serdes.string(), Serdes.json()).join(
        names, lambda order, name: {**order, "customer": name}, Serdes.json())
    joined.to(enriched, Serdes.string(), Serdes.json())
    return builder.build()


def sample(topic: Callable[[str], str]) -> Iterator[tuple[str, tuple[str | None, bytes, int]]]:
    now = int(time.time() * 1000)
    for cid, name in CUSTOMERS.items():
        yield topic("customers"), (cid, name.encode(), now)
    rng = random.Random(3)
    for i in itertools.count():
        cid = rng.choice(list(CUSTOMERS))
        order = Serdes.json().serialize({"order": i, "amount": rng.randint(1, 500)}) or b""
        yield topic("orders"), (cid, order, int(time.time() * 1000))


def summary(rows: list[Any]) -> str:
    import json

    orders = [json.loads(row.value) for row in rows]
    per_customer: dict[str, int] = {}
    for order in orders:
        per_customer[order["customer"]] = per_customer.get(order["customer"], 0) + order["amount"]
    return (f"{len(orders):,} enriched orders; amount per customer:\n"
            + "\n".join(f"  {name:>8} {amount:>9,}" for name, amount in sorted(per_customer.items())))


def main(argv: list[str] | None = None, spark: Any = None, keep_inputs: bool = False) -> Any:
    from examples.runner import Example, arguments, run

    example = Example(
        name="enrich-orders", topology="examples.enrich_orders:topology",
        inputs={"orders": 2, "customers": 2}, outputs={"enriched-orders": 2}, sample=sample, summary=summary,
        topology_args=lambda topic: {"orders": topic("orders"), "customers": topic("customers"),
                                     "enriched": topic("enriched-orders")},
    )
    return run(example, arguments(__doc__.splitlines()[0], argv), spark, keep_inputs)


if __name__ == "__main__":
    from examples.runner import script

    script(main)
