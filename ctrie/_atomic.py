"""Reading an ``AtomicRef`` whose value another thread may free: :func:`read`.

On a free-threaded build, cereggii 1.0.1's ``AtomicRef.get()`` loads the reference, then
takes a new reference with ``_Py_TryIncref`` and returns the object, without checking that
the ``AtomicRef`` still points to it. If another thread replaced the value and dropped its
last reference in between, the object's memory may already hold a new object of the same
size, whose count ``_Py_TryIncref`` raises: ``get()`` then returns an object that was never
stored in that ``AtomicRef``. CPython's own lock-free reads re-check the source after the
increment for this reason (``_Py_TryIncrefCompare``). Here every node replaced by a GCAS is
such a value: a trie's writers free main nodes, and allocate new ones of the same sizes, all
the time. Seen in this package (stop 40): under inbox churn beside a snapshotting monitor,
``inode.main.get()`` returned a C-node of another I-node (a root's at an inbox level, an
inbox's at the root) in 13 of 30 runs of 5 s on 3.13.15t, and an unsubscribe of a pair its
own thread had just subscribed returned False (``tests/test_tombs.py``'s churn test failed
that way in 2 of 12 runs).

On a free-threaded build the trie reads such a reference twice: if the second ``get()``
returns the very object the first returned, that object was the reference's value at the
second load (the first call's reference keeps it alive, so its memory holds no other object,
and the second call got it from the pointer it loaded). Otherwise it reads again
(:func:`read`). It returns as soon as two reads agree: a reader is kept reading only by
writers that keep replacing the value, the same lock-freedom as every retry in the trie. The
hot paths write the second read inline, after the first::

    m = ref.get()
    if FREE_THREADED_BUILD and ref.get() is not m:
        m = read(ref)

On a GIL build ``get()`` holds the GIL from the load to the increment, so no object can be
freed in between: the inline test is one global read, and :func:`read` reads once.

Values that are never freed while the reference holds them need none of this: integers of
``AtomicInt64``, the RDCSS status words (module constants), a tomb's frozen C-node, a
``prev`` reference's verdict (None or a FailedNode, final), a log entry's ``next`` (set
once). Nor does a comparison with an object the reader holds (``ref.get() is m``): a wrong
object is never ``m``, so the comparison only errs towards "changed", which every caller
answers by reading again.
"""

from __future__ import annotations

import sysconfig
from typing import TypeVar

from cereggii import AtomicRef

__all__ = ["read", "FREE_THREADED_BUILD"]

_T = TypeVar("_T")

#: Whether this interpreter was built without the GIL (``Py_GIL_DISABLED``): the build, not
#: whether the GIL happens to run (``PYTHON_GIL=1``), decides which ``get()`` is compiled.
FREE_THREADED_BUILD = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def read(ref: AtomicRef[_T]) -> _T:
    """``ref``'s value: an object that was stored in it (see the module). Duck-typed (it
    calls ``ref.get()``), so that the tests' stand-ins for a reference still serve."""
    m = ref.get()
    if not FREE_THREADED_BUILD:
        return m
    while True:
        m2 = ref.get()
        if m2 is m:
            return m
        m = m2
