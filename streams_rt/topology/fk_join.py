"""The foreign-key table join (KIP-213), built as Kafka Streams builds it: the left table's entries
subscribe to their foreign keys through a subscription topic partitioned like the right table; the
right side keeps the subscriptions in a store (foreign key + primary key), answers each new one and,
on every change of a foreign entry, all of its subscribers (a prefix scan), through a response topic
partitioned like the left table; the left side joins each response with its entry's current value,
dropping a response to a value that has changed since (their hashes differ). The result is a table
(materialized when `store` is named).

Nodes, topics and the subscription store get Kafka's names (`KTABLE-FK-JOIN-...`), from the same
indexes, or `<name>-subscription-registration-topic` and so on when the join is named."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streams_rt.topology.errors import TopologyError
from streams_rt.topology.ktable import SourceOrigin, _source_names, read_values
from streams_rt.topology.nodes import SinkNode, SourceNode, TableSource
from streams_rt.topology.serdes import Serde
from streams_rt.topology.stores import StoreDefinition, check_name
from streams_rt.topology.subscriptions import CombinedKeySerde, ResponseSerde, SubscriptionSerde
from streams_rt.topology.table_ops import (
    ForeignTableJoin,
    ResponseJoin,
    SubscriptionJoin,
    SubscriptionReceive,
    SubscriptionSend,
    getter_stores,
)

if TYPE_CHECKING:
    from streams_rt.topology.dsl import KTable

_FK = "KTABLE-FK-JOIN-"


def foreign_key_join(this: KTable, other: KTable, extractor: Callable[[Any], Any], joiner: Callable[[Any, Any], Any],
                     left: bool, value_serde: Serde[Any] | None, store: str | None, in_memory: bool,
                     name: str | None) -> KTable:
    from streams_rt.topology.dsl import KTable

    b = this._b
    if other._b is not b:
        raise TopologyError(name or "join", "cannot join tables of different builders")

    def named(suffix: str, prefix: str) -> str:
        return b._name_or(name and f"{name}{suffix}", prefix)

    # Old values of both sides: the right side's spare prefix scans for unchanged values, the left
    # side's tell which foreign key an entry leaves.
    other._origin.enable_old_values(True)
    this._origin.enable_old_values(True)
    registration_topic = named("-subscription-registration", _FK + "SUBSCRIPTION-REGISTRATION") + "-topic"
    check_name(registration_topic, "subscription topic")
    subscriptions = SubscriptionSerde(this.key_serde)
    send = b._processor(this.node, "", SubscriptionSend(extractor, left, other.key_serde, this.value_serde),
                        name=named("-subscription-registration-processor", _FK + "SUBSCRIPTION-REGISTRATION"))
    sink = b._add(SinkNode(named("-subscription-registration-sink", "KTABLE-SINK"), topic=registration_topic,
                           key_serde=other.key_serde, value_serde=subscriptions, internal=True))
    send.add_child(sink)
    source = b._add(SourceNode(named("-subscription-registration-source", "KTABLE-SOURCE"),
                               topics=(registration_topic,), key_serde=other.key_serde, value_serde=subscriptions,
                               internal=True))
    b._copartitioned.append(frozenset({*_source_names(other.node), source.name}))

    subscription_store = named("-subscription-store", _FK + "SUBSCRIPTION-STATE-STORE")
    b.add_state_store(StoreDefinition(subscription_store, CombinedKeySerde(other.key_serde, this.key_serde),
                                      subscriptions, timestamped=True, queryable=False))
    receive = b._processor(source, "", SubscriptionReceive(subscription_store), (subscription_store,),
                           named("-subscription-receive", _FK + "SUBSCRIPTION-PROCESSOR"))
    foreign = read_values(other, name or "foreign-key join")
    answer = b._processor(receive, "", SubscriptionJoin(foreign), getter_stores(foreign),
                          named("-subscription-join-foreign", _FK + "SUBSCRIPTION-PROCESSOR"))
    changes = b._processor(other.node, "", ForeignTableJoin(subscription_store), (subscription_store,),
                           named("-foreign-join-subscription", _FK + "SUBSCRIPTION-PROCESSOR"))

    response_topic = named("-subscription-response", _FK + "SUBSCRIPTION-RESPONSE") + "-topic"
    check_name(response_topic, "response topic")
    responses = ResponseSerde(other.value_serde)
    response_sink = b._add(SinkNode(named("-subscription-response-sink", "KTABLE-SINK"), topic=response_topic,
                                    key_serde=this.key_serde, value_serde=responses, internal=True))
    answer.add_child(response_sink)
    changes.add_child(response_sink)
    response_source = b._add(SourceNode(named("-subscription-response-source", "KTABLE-SOURCE"),
                                        topics=(response_topic,), key_serde=this.key_serde, value_serde=responses,
                                        internal=True))
    b._copartitioned.append(frozenset({*_source_names(this.node), response_source.name}))

    primary = read_values(this, name or "foreign-key join")
    resolver = b._processor(response_source, "", ResponseJoin(primary, this.value_serde, joiner, left),
                            getter_stores(primary),
                            named("-subscription-response-resolver", _FK + "SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR"))
    result_name = named("-result", _FK + "OUTPUT")
    values = value_serde or this.value_serde
    result_store = store or b._name(_FK + "OUTPUT-STATE-STORE")
    result = b._processor(resolver, "", TableSource(None), name=result_name)
    origin = SourceOrigin(b, result, StoreDefinition(result_store, this.key_serde, values, in_memory=in_memory,
                                                     timestamped=True))
    if store is not None:
        origin.materialize()
    return KTable(b, result, origin.queryable, this.key_serde, values, origin)
