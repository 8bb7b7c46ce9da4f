"""Each host's group.instance.id from the application's one value: its own, and stable by name."""

from __future__ import annotations

from streams_rt.config import resolve
from streams_rt.tasks.static_membership import with_host_instance_id

APP = {"application.id": "app", "bootstrap.servers": "b:1"}


def test_each_host_appends_its_name_to_the_applications_instance_id() -> None:
    props = {**APP, "group.instance.id": "app"}
    ids = {with_host_instance_id(props, f"executor-{n}")["group.instance.id"] for n in range(3)}
    assert ids == {"app-executor-0", "app-executor-1", "app-executor-2"}
    assert with_host_instance_id(props, "executor-1") == with_host_instance_id(props, "executor-1")  # stable
    assert props["group.instance.id"] == "app"  # a copy
    resolve(with_host_instance_id(props, "executor-1"))  # still a valid id


def test_without_an_instance_id_hosts_stay_dynamic_members() -> None:
    assert "group.instance.id" not in with_host_instance_id(APP, "executor-0")
