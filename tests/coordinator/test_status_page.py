"""The live status page in headless Chromium (Debian's `chromium`), served by the coordinator of a
real application (task hosts as OS processes, the real broker): what the browser draws after the
page's script ran matches the coordinator's status: hosts, their tasks coloured by kind, lags, the
generation, and a timeline of rebalances with what moved; after a host joins, the page shows it.

With STREAMS_RT_SCREENSHOT=path the test also saves a screenshot there (docs/status-page.png is
made this way)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import urllib.request
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from streams_rt.rpc.batches import HostClient
from streams_rt.runtime.local import LocalApplication
from tests.coordinator.settle import wait_until
from tests.tasks.test_host import Apps, drain

pytestmark = pytest.mark.broker
CHROMIUM = shutil.which("chromium")



@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element] = field(default_factory=list)
    text: str = ""

    def find_all(self, predicate: Any) -> list[Element]:
        found = [self] if predicate(self) else []
        for child in self.children:
            found += child.find_all(predicate)
        return found

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def all_text(self) -> str:
        return self.text + "".join(child.all_text() for child in self.children)


class Dom(HTMLParser):
    VOID = {"meta", "br", "img", "input", "link", "hr"}

    def __init__(self, html: str) -> None:
        super().__init__()
        self.root = Element("document", {})
        self._open = [self.root]
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self._open[-1].children.append(element)
        if tag not in self.VOID:
            self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while len(self._open) > 1 and self._open.pop().tag != tag:
            pass

    def handle_data(self, data: str) -> None:
        self._open[-1].children.append(Element("#text", {}, text=data))


def rendered(url: str, screenshot: Path | None = None) -> Element:
    """The DOM after the page's script ran (virtual time lets its fetches and timers run)."""
    if CHROMIUM is None:
        pytest.fail("Debian's chromium is needed: apt-get install -y chromium (.ci/run installs it)")
    common = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--virtual-time-budget=8000", "--window-size=1280,1100"]
    if screenshot is not None:
        subprocess.run([*common, f"--screenshot={screenshot}", url], capture_output=True, timeout=120, check=True)
    result = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True)
    return Dom(result.stdout).root


def by_id(dom: Element, ident: str) -> Element:
    (found,) = dom.find_all(lambda e: e.attrs.get("id") == ident)
    return found


def drawn_hosts(dom: Element) -> dict[str, dict[str, set[str]]]:
    """host name -> kind -> the task chips drawn in its card."""
    hosts: dict[str, dict[str, set[str]]] = {}
    for card in dom.find_all(lambda e: "host" in e.classes() and "data-host" in e.attrs):
        kinds = hosts.setdefault(card.attrs["data-host"], {})
        for chip in card.find_all(lambda e: "task" in e.classes() and "data-task" in e.attrs):
            kind = chip.attrs["data-kind"]
            assert kind in chip.classes()  # the class is what colours it
            kinds.setdefault(kind, set()).add(chip.attrs["data-task"])
    return hosts


def drawn_draining(dom: Element) -> set[str]:
    """The hosts whose card is drawn draining: dashed (its class) with a `draining` badge."""
    return {card.attrs["data-host"] for card in dom.find_all(lambda e: "host" in e.classes() and "data-host" in e.attrs)
            if "draining" in card.classes()
            and [b.all_text() for b in card.find_all(lambda e: "data-draining" in e.attrs)] == ["draining"]}


def expected_hosts(status: dict[str, Any]) -> dict[str, dict[str, set[str]]]:
    return {h["name"]: {kind: set(h[kind]) for kind in ("active", "standby", "warmup", "revoke") if h[kind]}
            for h in status["hosts"]}


def chip_lags(dom: Element) -> dict[tuple[str, str, str], str | None]:
    """(host, kind, task) -> the lag drawn on that chip (None: none drawn)."""
    out = {}
    for card in dom.find_all(lambda e: "host" in e.classes() and "data-host" in e.attrs):
        for chip in card.find_all(lambda e: "task" in e.classes() and "data-task" in e.attrs):
            lag = [child.all_text() for child in chip.children if "lag" in child.classes()]
            out[(card.attrs["data-host"], chip.attrs["data-kind"], chip.attrs["data-task"])] = lag[0] if lag else None
    return out


def expected_lags(status: dict[str, Any]) -> dict[tuple[str, str, str], str | None]:
    lags = {t["task"]: t["lags"] for t in status["tasks"]}
    return {(h["name"], kind, task): (str(lags[task][h["member"]]) if h["member"] in lags.get(task, {}) else None)
            for h in status["hosts"] for kind in ("active", "standby", "warmup", "revoke") for task in h[kind]}


def render_settled(app: LocalApplication, url: str, screenshot: Path | None = None) -> tuple[Element, dict[str, Any]]:
    """The page and the status it drew: read before and after, retried while a round intervenes. The
    page is given the run's secret in its address's fragment, as an operator may."""
    assert app.coordinator.secret is not None
    url = f"{url}/#secret={app.coordinator.secret.token}"
    def lasting(status: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in status.items() if k not in ("now_ms", "metrics")}

    for _ in range(5):
        before = app.coordinator.status()
        dom = rendered(url, screenshot)
        if lasting(before) == lasting(app.coordinator.status()):
            return dom, before
    raise AssertionError("the group kept changing while the page was drawn")


def check_page(dom: Element, status: dict[str, Any]) -> None:
    """Everything the page draws is the status it read."""
    assert by_id(dom, "app").all_text() == status["application_id"]
    assert by_id(dom, "state").all_text() == status["state"]
    assert by_id(dom, "protocol").all_text() == status["protocol"]
    assert by_id(dom, "host-count").all_text() == str(len(status["hosts"]))
    assert "display: block" not in by_id(dom, "error").attrs.get("style", "")
    assert drawn_hosts(dom) == expected_hosts(status)
    assert drawn_draining(dom) == {h["name"] for h in status["hosts"] if h["draining"]}
    assert chip_lags(dom) == expected_lags(status)
    rows = {row.attrs["data-task"]: [cell.all_text() for cell in row.children if cell.tag == "td"]
            for row in by_id(dom, "tasks").find_all(lambda e: e.tag == "tr" and "data-task" in e.attrs)}
    names = {h["member"]: h["name"] for h in status["hosts"]}
    assert rows == {t["task"]: [t["task"], t["state"], names.get(t["active"], "none"),
                                ", ".join(names[m] for m in t["standby"]), ", ".join(names[m] for m in t["warmup"])]
                    for t in status["tasks"]}
    timeline = by_id(dom, "rebalances").find_all(lambda e: e.tag == "li")
    assert [int(li.attrs["data-generation"]) for li in timeline] == [
        e["generation"] for e in reversed(status["rebalances"])]
    for li, event in zip(timeline, reversed(status["rebalances"]), strict=True):
        moves = [m.all_text() for m in li.find_all(lambda e: "move" in e.classes())]
        assert moves == [f"{m['task']} {m['kind']}: {m['from'] or 'none'} \u2192 {m['to'] or 'none'}"
                         for m in event["moves"]]
        assert event["reason"] in li.all_text()


def test_the_status_page_draws_the_groups_hosts_tasks_and_rebalances(apps: Apps, tmp_path: Path) -> None:
    apps.create_topics({"pv-views": 4, "pv-counts": 4})
    apps.produce("pv-views", [(f"page-{i % 40}", b"view", 1_700_000_000_000 + i * 1_000) for i in range(800)])
    # Every task is stateful, and with acceptable.recovery.lag 0 a host that joins is caught up on none:
    # it gets warm-ups first (max.warmup.replicas of them), not actives.
    app, loop = apps.start("page_views", hosts=1, **{"acceptable.recovery.lag": 0})
    drain(loop)
    url = app.coordinator.http_url
    assert url is not None
    with urllib.request.urlopen(url + "/", timeout=10) as response:
        css = response.read().decode()
    colours = {kind: re.search(rf"\.task\.{kind} {{ background: (#[0-9a-f]+)", css)
               for kind in ("active", "standby", "warmup")}
    assert all(colours.values()) and len({m.group(1) for m in colours.values() if m}) == 3

    wait_until(app, lambda s: s["state"] == "STABLE" and all(t["state"] == "RUNNING" for t in s["tasks"]))
    bare = rendered(url)  # without the run's secret the page asks for it and draws nothing
    assert "hidden" not in by_id(bare, "secret-form").attrs and not drawn_hosts(bare)
    assert "takes the run's secret" in by_id(bare, "error").all_text()
    dom, status = render_settled(app, url)
    check_page(dom, status)
    assert "hidden" in by_id(dom, "secret-form").attrs
    (first,) = status["hosts"]
    assert drawn_hosts(dom) == {first["name"]: {"active": {"0_0", "0_1", "0_2", "0_3"}}}

    app.start_host("host-1")
    wait_until(app, lambda s: s["state"] == "STABLE" and len(s["hosts"]) == 2 and any(h["warmup"] for h in s["hosts"])
               and all(t["state"] == "RUNNING" for t in s["tasks"]))
    shot = Path(os.environ.get("STREAMS_RT_SCREENSHOT", tmp_path / "status-page.png"))
    dom, status = render_settled(app, url, screenshot=shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    check_page(dom, status)
    (new,) = [h["name"] for h in status["hosts"] if h["name"] != first["name"]]
    assert drawn_hosts(dom)[new].get("warmup")  # drawn in the warm-up colour
    assert any(m.all_text().startswith("0_") and m.all_text().endswith(f"\u2192 {new}")
               for m in by_id(dom, "rebalances").find_all(lambda e: "move" in e.classes()))
    assert any(f"new member {new}" in li.all_text() for li in by_id(dom, "rebalances").children)
    # Lags the hosts reported are drawn on their chips: the first host's running actives are 0 behind.
    assert {chip_lags(dom)[(first["name"], "active", task)] for task in first["active"]} <= {"0"}


def test_the_status_page_draws_a_draining_host(apps: Apps) -> None:
    """A host asked to drain with nowhere to send its tasks (the only host) keeps them, draining,
    until another joins: the page draws it dashed with a badge, as `status` shows it."""
    apps.create_topics({"pv-views": 4, "pv-counts": 4})
    app, loop = apps.start("page_views", hosts=1)
    drain(loop)
    url = app.coordinator.http_url
    assert url is not None
    wait_until(app, lambda s: s["state"] == "STABLE" and all(t["state"] == "RUNNING" for t in s["tasks"]))
    (only,) = app.coordinator.status()["hosts"]
    with HostClient(str(only["endpoint"]), secret=app.coordinator.secret) as client:
        client.drain("the status page test")
    wait_until(app, lambda s: s["state"] == "STABLE" and [h["draining"] for h in s["hosts"]] == [True])
    dom, status = render_settled(app, url)
    check_page(dom, status)
    assert drawn_draining(dom) == {only["name"]}
