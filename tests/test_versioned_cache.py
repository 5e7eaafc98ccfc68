"""kgrag.versioned.VersionedCache: one load per version of a key, the previous value open until the one after it
replaces it, one loader per key under concurrency and none across keys — synchronised with events and conditions,
never with sleeps."""

from __future__ import annotations

import gc
import threading
import weakref
from collections import Counter

import pytest

from kgrag.versioned import VersionedCache

WAIT = 30  # seconds: only a guard against a hang; every wait below returns as soon as its event happens


class Value:
    def __init__(self, key: str, version: int) -> None:
        self.key, self.version, self.closed = key, version, False

    def close(self) -> None:
        assert not self.closed, "closed twice"
        self.closed = True


class Source:
    """Versions per key (the token) and a loader that counts its loads."""

    def __init__(self) -> None:
        self.versions: dict[str, int | None] = {"a": 1, "b": 1}
        self.loads: Counter[str] = Counter()
        self.token_calls = 0

    def token(self, key: str) -> int | None:
        self.token_calls += 1
        return self.versions[key]

    def load(self, key: str) -> Value:
        self.loads[key] += 1
        return Value(key, self.versions[key] or 0)

    def cache(self, **kwargs: object) -> VersionedCache[str, Value]:
        return VersionedCache(self.token, self.load, close=Value.close, **kwargs)

    def two_versions(self) -> tuple[VersionedCache[str, Value], Value, Value]:
        """A cache that got key a at version 1, then at version 2."""
        cache = self.cache()
        first = cache.get("a")
        self.versions["a"] = 2
        return cache, first, cache.get("a")


def test_loads_once_per_version_and_a_hit_is_one_token_read() -> None:
    source = Source()
    cache = source.cache()
    first = cache.get("a")
    calls = source.token_calls
    assert cache.get("a") is first and cache.get("a") is first
    assert source.loads["a"] == 1
    assert source.token_calls == calls + 2  # one token read (one stat) per hit, nothing else


def test_a_new_token_reloads() -> None:
    source = Source()
    cache, old, new = source.two_versions()
    assert new is not old and new.version == 2 and source.loads["a"] == 2
    assert cache.get("a") is new and source.loads["a"] == 2


def test_the_previous_value_stays_open_until_the_next_replaces_it() -> None:
    source = Source()
    cache, v1, v2 = source.two_versions()
    assert not v1.closed  # a request that got v1 keeps working
    source.versions["a"] = 3
    v3 = cache.get("a")
    assert v1.closed and not v2.closed and not v3.closed  # two versions held at most
    cache.close()
    assert v2.closed and v3.closed
    assert cache.get("a") is not v3 and source.loads["a"] == 4  # after close a get loads again


def test_without_close_nothing_is_retained() -> None:
    source = Source()
    cache: VersionedCache[str, Value] = VersionedCache(source.token, source.load)
    v1 = weakref.ref(cache.get("a"))
    source.versions["a"] = 2
    v2 = cache.get("a")
    gc.collect()
    assert v1() is None and cache.get("a") is v2 and source.loads["a"] == 2  # the replaced value lives only as long as its callers hold it


def test_a_failed_load_caches_nothing_and_keeps_the_held_value() -> None:
    source = Source()
    failing = {"a": False}

    def load(key: str) -> Value:
        if failing[key]:
            raise RuntimeError("not prepared")
        return source.load(key)

    cache: VersionedCache[str, Value] = VersionedCache(source.token, load, close=Value.close)
    v1 = cache.get("a")
    source.versions["a"], failing["a"] = 2, True
    with pytest.raises(RuntimeError):
        cache.get("a")
    source.versions["a"] = 1  # the version still held: no load (it would fail), the held value
    assert cache.get("a") is v1 and not v1.closed
    source.versions["a"], failing["a"] = 2, False
    assert cache.get("a").version == 2 and not v1.closed


def test_a_version_landing_during_a_load_loads_again() -> None:
    """The store and graph are read apart: a version committed between them makes the value mixed — it is closed,
    never handed out, and the new version loaded."""
    source = Source()
    landed: list[Value] = []

    def load(key: str) -> Value:
        value = source.load(key)
        if not landed:
            landed.append(value)
            source.versions[key] = 2  # a commit while this value was being read
        return value

    cache: VersionedCache[str, Value] = VersionedCache(source.token, load, close=Value.close)
    value = cache.get("a")
    assert value.version == 2 and landed[0].closed and not value.closed
    assert cache.get("a") is value and source.loads["a"] == 2


def test_a_version_landing_on_every_load_gives_up_after_the_retries() -> None:
    source = Source()

    def load(key: str) -> Value:
        value = source.load(key)
        if source.loads[key] <= 3:  # a commit during each of the first three loads
            source.versions[key] = (source.versions[key] or 0) + 1
        return value

    cache: VersionedCache[str, Value] = VersionedCache(source.token, load, close=Value.close, retries=2)
    value = cache.get("a")
    assert source.loads["a"] == 3 and value.version == 3 and not value.closed  # the first load, two retries
    # held at the token read before its load (3) while the version is 4 now: the next get loads that one
    assert cache.get("a").version == 4 and source.loads["a"] == 4


def test_a_gone_token_keeps_the_held_value_only_when_asked() -> None:
    source = Source()
    keeping = source.cache(keep_when_gone=True)
    held = keeping.get("a")
    source.versions["a"] = None  # a re-import swapping the folder: no version file, no graph
    assert keeping.get("a") is held and source.loads["a"] == 1
    plain = source.cache()
    source.versions["a"] = 1
    plain.get("a")
    source.versions["a"] = None
    assert plain.get("a").version == 0 and source.loads["a"] == 3


def test_concurrent_gets_of_a_changed_key_load_once() -> None:
    """8 threads read the stale token of a changed key before its load ends: one loads, the others wait for it
    and get its value (without the per-key lock each would load)."""
    threads_n = 8
    versions = {"a": 1}
    reads = threading.Condition()
    state = {"token_reads": 0, "loads": 0, "armed": False}

    def token(key: str) -> int:
        with reads:
            state["token_reads"] += 1
            reads.notify_all()
        return versions[key]

    def load(key: str) -> Value:
        state["loads"] += 1
        if state["armed"]:  # hold the load until every thread has read the (changed) token
            with reads:
                assert reads.wait_for(lambda: state["token_reads"] >= threads_n + 1, timeout=WAIT)
        return Value(key, versions[key])

    cache: VersionedCache[str, Value] = VersionedCache(token, load, close=Value.close)
    old = cache.get("a")
    versions["a"] = 2
    state.update(token_reads=0, loads=0, armed=True)
    start = threading.Barrier(threads_n)
    got: list[Value] = []

    def worker() -> None:
        start.wait(timeout=WAIT)
        got.append(cache.get("a"))

    workers = [threading.Thread(target=worker) for _ in range(threads_n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=WAIT)
    assert not any(w.is_alive() for w in workers)
    assert state["loads"] == 1
    assert len(got) == threads_n and len({id(v) for v in got}) == 1 and got[0].version == 2
    assert not old.closed  # the previous version stays open for the calls that had it


def test_distinct_keys_load_in_parallel() -> None:
    """A slow load of key a does not block key b: b is loaded and returned while a's load is still waiting."""
    a_loading, release_a, a_done = threading.Event(), threading.Event(), threading.Event()

    def load(key: str) -> Value:
        if key == "a":
            a_loading.set()
            assert release_a.wait(timeout=WAIT)
        return Value(key, 1)

    cache: VersionedCache[str, Value] = VersionedCache(lambda key: 1, load, close=Value.close)
    got: dict[str, Value] = {}

    def get_a() -> None:
        got["a"] = cache.get("a")
        a_done.set()

    slow = threading.Thread(target=get_a)
    slow.start()
    assert a_loading.wait(timeout=WAIT)
    fast = threading.Thread(target=lambda: got.__setitem__("b", cache.get("b")))
    fast.start()
    fast.join(timeout=WAIT)
    b_while_a_loads = not fast.is_alive() and not a_done.is_set()
    release_a.set()
    slow.join(timeout=WAIT)
    assert b_while_a_loads, "key b waited for key a's load"
    assert got["a"].key == "a" and got["b"].key == "b"
