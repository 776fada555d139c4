"""A paginated LIST read ahead of its parser: each page is asked for as soon as the page before it has named
it in its first bytes (the continue token comes before the items), not once that page has arrived whole and been
parsed. The server then builds the next page while this one is still on its way, and over a slow link the
pages' transfers follow each other without a round trip between them.

At most `ahead` pages are being fetched or held unparsed at once; a page found when no room is left is asked for
as soon as the parser takes one. When the first bytes do not say, the next page is asked for once the parse has
named it. A guess the parse contradicts is dropped with whatever it started, and the page the parse names is asked
for instead: every page is read once and in order, whatever the first bytes held.

The pages are fetched on a concurrent.futures pool rather than daemon threads: one still inside OpenSSL when the
interpreter tears OpenSSL down at exit crashes the process (seen as a SIGSEGV after a refused TLS handshake). A
stopped read does not wait for the pages on their way (live.list_pages shuts the pool down without waiting); the
exit gives them a moment and then ends the process without that teardown (interrupts.leave)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass

# fetch(continue token, headed): the page's bytes. It calls headed(token) once, as soon as its first bytes say
# which page follows: the token, "" for none, None when they do not say.
Fetch = Callable[[str, Callable[[str | None], None]], bytes]


@dataclass(eq=False)
class Page:
    future: Future[bytes]
    peeked: str | None = None  # what the first bytes named next ("" none, None unknown), once headed
    next: Page | None = None
    dropped: bool = False  # a wrong guess: nothing after it is asked for


class ReadAhead:
    def __init__(self, pool: Executor, fetch: Fetch, ahead: int) -> None:
        self._pool = pool
        self._fetch = fetch
        self._free = ahead
        self._lock = threading.Lock()
        self._waiting: Page | None = None  # headed with no room left: asked for when the parser takes a page
        self._closed = False

    def first(self) -> Page:
        with self._lock:
            self._free -= 1
            return self._ask("")

    def take(self, page: Page) -> bytes:
        """The page's bytes, once it has arrived whole; it is the parser's from then on, which makes room."""
        raw = page.future.result()
        with self._lock:
            self._free += 1
            waiting, self._waiting = self._waiting, None
            if waiting is not None and waiting.peeked and not waiting.dropped:
                self._free -= 1
                waiting.next = self._ask(waiting.peeked)
        return raw

    def follow(self, page: Page, cont: str) -> Page | None:
        """The page after `page`, whose parse named `cont` ("" at the end of the list)."""
        dropped: list[Page] = []
        with self._lock:
            if page.peeked == cont and (not cont or page.next is not None):
                return page.next
            guess = page.next
            page.next = None
            while guess is not None:  # the guess and what it started
                guess.dropped = True
                dropped.append(guess)
                if self._waiting is guess:
                    self._waiting = None
                guess = guess.next
            following = None
            if cont:
                self._free -= 1  # asked for now, room or not: the parser waits for it next
                following = self._ask(cont)
        for d in dropped:  # its room comes back once it is done (at once, if it is)
            d.future.add_done_callback(self._dropped_done)
        return following

    def close(self) -> None:
        """The parser is done (or failed): nothing more is asked for."""
        with self._lock:
            self._closed = True
            self._waiting = None

    def _ask(self, cont: str) -> Page:  # with the lock held
        page = Page(Future())
        page.future = self._pool.submit(self._fetch, cont, functools.partial(self._headed, page))
        return page

    def _headed(self, page: Page, token: str | None) -> None:  # on a fetching thread
        with self._lock:
            page.peeked = token
            if not token or page.dropped or self._closed:
                return
            if self._free > 0:
                self._free -= 1
                page.next = self._ask(token)
            else:
                self._waiting = page

    def _dropped_done(self, _future: Future[bytes]) -> None:
        with self._lock:
            self._free += 1
