"""Lock-free concurrent subscription tries for publish/subscribe topic matching.

The topic model (:class:`Dialect`, :func:`validate_pattern`, :func:`validate_topic` and the
reference :func:`matches`), the errors every matcher raises, the :class:`Matcher` protocol
and :class:`CSTrie`, the lock-free Ctrie-style subscription trie; :class:`ReplicatedTrie`
keeps one CS-trie per thread, current from a shared log of writes (reads that share nothing).
"""

from .cstrie import CSTrie
from .errors import InvalidTopicError, ReadOnlyError, UnsupportedPatternError
from .protocol import Matcher
from .replicated import ReplicatedTrie
from .topics import Dialect, matches, validate_pattern, validate_topic

__version__ = "0.1.0"

__all__ = [
    "CSTrie",
    "Dialect",
    "InvalidTopicError",
    "Matcher",
    "ReadOnlyError",
    "ReplicatedTrie",
    "UnsupportedPatternError",
    "matches",
    "validate_pattern",
    "validate_topic",
]
