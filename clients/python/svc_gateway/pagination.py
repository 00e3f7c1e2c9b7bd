"""Paged lists: ``{data, hasMore, nextCursor}`` pages and walking all of them."""

from typing import Any, Callable, Dict, Generic, Iterator, List, Optional, TypeVar

T = TypeVar("T")


class Page(Generic[T]):
    """One page of a list, newest first. ``auto_paging_iter()`` yields every item from here on."""

    def __init__(self, body: Dict[str, Any], fetch: Callable[[Optional[str]], "Page[T]"]) -> None:
        #: The items of this page.
        self.data: List[T] = body["data"]
        self.has_more: bool = body["hasMore"]
        #: The ``starting_after`` of the next page; None on the last.
        self.next_cursor: Optional[str] = body["nextCursor"]
        self._fetch = fetch

    def next_page(self) -> Optional["Page[T]"]:
        """The following page, or None when this is the last."""
        if not self.has_more or not self.next_cursor:
            return None
        return self._fetch(self.next_cursor)

    def auto_paging_iter(self) -> Iterator[T]:
        """Every item of this page and the following ones (a generator: a page is fetched when the previous one is used up)."""
        page: Optional[Page[T]] = self
        while page is not None:
            yield from page.data
            page = page.next_page()

    def __repr__(self) -> str:
        return f"Page(data=<{len(self.data)} items>, has_more={self.has_more!r}, next_cursor={self.next_cursor!r})"
