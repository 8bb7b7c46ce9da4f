"""Driver-side group coordinator: membership, generations, rebalance rounds and version probing.

It plays both the broker's group coordinator and Kafka Streams' group leader, so it alone decides
which host owns which task."""
