"""blowfish-privacy (interim init while the policy modules are written)."""

from . import errors, mechanisms
from .accountant import Accountant
from .noise import Generator

__version__ = "0.1.0"
