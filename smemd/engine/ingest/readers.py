"""Who reads a namespace's documents: the chat model that extracts their facts and the judge
that reconciles them. The fleet's (or the heuristics, on a fleet without one), unless the
namespace names a llama-server of its own in the store — as a re-derivation's shadow does when it
is started with a model (smemd.engine.rederive), so that every daemon sharing the store, and this
one after a restart, reads that shadow with the same model.
"""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp

from smemd.engine.index.per_namespace import Indexes
from smemd.engine.ingest.reconciling import Reconciler
from smemd.engine.judgement.calibration import DEFAULT_THRESHOLDS
from smemd.engine.judgement.letter_judge import Judge
from smemd.fleet.llama import ChatModel, LlamaClient
from smemd.store.protocol import Store

# The store's setting that names a namespace's own model: this + the namespace -> its base URL.
MODEL_SETTING = "chat-model:"
# A model named for one namespace is one llama-server with no fleet to spread over: its calls
# wait longer than a node's (the extraction's own timeout still bounds each).
NAMED_MODEL_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Reading:
    llm: ChatModel | None  # None: facts are cut by the heuristics
    reconciler: Reconciler
    model_url: str | None = None  # a namespace's own llama-server; None: the fleet's


class Readers:
    def __init__(
        self, store: Store, indexes: Indexes, llm: ChatModel | None, judge: Judge | None
    ) -> None:
        self.store = store
        self.indexes = indexes
        self.fleets = Reading(llm, Reconciler(store, indexes, judge))
        self._named: dict[str, Reading] = {}  # by URL
        self._session: aiohttp.ClientSession | None = None

    async def of(self, namespace: str) -> Reading:
        """The reading of the namespace's documents: one read of the store."""
        async with self.store.read() as reader:
            url = await reader.setting(MODEL_SETTING + namespace)
        if not url:
            return self.fleets
        if url not in self._named:
            client = self.client(url)
            judge = Judge(client, thresholds=DEFAULT_THRESHOLDS)
            self._named[url] = Reading(client, Reconciler(self.store, self.indexes, judge), url)
        return self._named[url]

    def client(self, url: str) -> LlamaClient:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return LlamaClient(self._session, url, node=url, timeout=NAMED_MODEL_TIMEOUT_S)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        self._named.clear()
