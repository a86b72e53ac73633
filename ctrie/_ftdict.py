"""Why no hot path calls ``dict.get``, nor copies a small level with ``dict.copy()``: two
free-threaded CPython 3.13 pathologies.

On free-threaded CPython 3.13 (measured on 3.13.5t, Debian trixie's, and 3.13.15t, built from
Debian sid's source), ``d.get(key)`` called from a thread that did not create ``d``, with a
``str`` key equal to the stored key but not the same object, takes 13-20 us instead of about
0.1-0.2 us: ``dict.get`` runs inside the dict's critical section, and when the lock-free
comparison of the non-identical key fails, its fallback asks for the same mutex again and
spins in ``sched_yield`` (``_PyMutex_LockTimed`` <- ``_PyCriticalSection_BeginSlow`` <-
``_Py_dict_lookup_threadsafe``). Topic words are fresh strings (``str.split``) and tries are
built by one thread and read by others, so every level of every lookup paid it.

``tools/ft_dict_get.py`` reproduces it for the interpreter it runs on. On 3.13.15t (2 cores)
it measured 54 ns in the creating thread against 20,800 ns in another one, while ``key in d``
+ ``d[key]``, ``d[key]``, ``d.get`` of a missing key, ``d.setdefault`` and ``d.pop(k, None)``
cost their normal 30-100 ns from any thread. Once the reading thread has iterated the dict,
its ``d.get`` is fast too (59 ns): the slow path is taken for dicts the reader has not yet
marked as shared, and a trie publishes new dicts with every write, so that is no remedy. On
the GIL build ``k in d`` + ``d[k]`` costs one more hash probe (the hash of a str is cached),
about 10-30 ns.

The idiom used everywhere instead (CS-trie and every baseline alike, so the comparison stays
fair), written inline because a call costs as much as a level of a walk::

    x = d[k] if k in d else None          # not dict.get: see ctrie/_ftdict.py

``tests/test_hot_paths.py`` traces every matcher's hot paths and fails on any call in
:data:`AVOIDED`.

A second one, single-threaded: ``d.copy()`` of a small dict that deletions have left sparse
(one entry after two insert-and-delete rounds, three after five) takes about 16 us on
3.13.15t, against 0.1 us for the same content fresh, and the copy-on-write writes of a trie
make such dicts all the time (each unsubscribe deletes from a copy). Copying and inserting,
then copying and deleting, cost about 8 us a pair at one entry with ``d.copy()``, 0.3 with
``{**d}`` (``tools/ft_dict_get.py --copy``). A reader beside such a writer pays too: a copy
holds the source dict's lock, which the reader's first read of that dict waits for (in the
``starvation`` experiment's depth-4 fork, a reader's validation took 10.2-10.4 us beside a
writer of its level with ``d.copy()``, 6.2-7.3 with ``{**d}``). So on a free-threaded build
the CS-trie copies a level of at most ``ctrie.nodes.SMALL_COPY_MAX`` words with ``{**d}``;
wider ones, where ``d.copy()`` is still the cheaper, keep it, as the GIL build does
everywhere (``tests/test_hot_paths.py`` counts the copies).
"""

from __future__ import annotations

__all__ = ["AVOIDED"]

# C methods (``type.__qualname__`` of the bound builtin) that no hot path may call.
AVOIDED: frozenset[str] = frozenset({"dict.get"})
