"""Baseline topic matchers that the lock-free ``ctrie.CSTrie`` is compared against.

All of them implement the :class:`ctrie.Matcher` protocol and are thread-safe through locks:

- :class:`NaiveMatcher`: a pattern -> subscribers map scanned in full on every lookup;
- :class:`InvertedBitmapMatcher`: one subscription bitmap per topic of a fixed topic space
  (a topic outside it matches nothing, or raises :class:`TopicOutsideSpaceError` with
  ``outside_space="raise"``);
- :class:`OptimizedBitmapMatcher`: per-word-position bitmaps ANDed at lookup, for topics of
  at most ``max_words`` words (some AMQP patterns are unsupported, see its docstring);
- :class:`LockedTrie`: a subscription trie behind one lock (the NATS sublist design).
"""

from .inverted_bitmap import InvertedBitmapMatcher, TopicOutsideSpaceError
from .locked_trie import LockedTrie
from .naive import NaiveMatcher
from .optimized_bitmap import OptimizedBitmapMatcher

__all__ = ["InvertedBitmapMatcher", "LockedTrie", "NaiveMatcher", "OptimizedBitmapMatcher",
           "TopicOutsideSpaceError"]
