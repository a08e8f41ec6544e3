"""Exceptions raised by blowfish-privacy.

Every error names the parameter, the value it got and what is allowed.
They subclass the built-in exception a caller would expect (ValueError for
bad values), so ``except ValueError`` keeps working.
"""


class BudgetExceededError(ValueError):
    """A spend would take the privacy budget past its total."""


class UnsupportedPolicyError(NotImplementedError):
    """The policy is valid but no proven sensitivity exists for it here.

    Raised instead of guessing: calibrating noise below a proven bound would
    break the guarantee.
    """
