"""Prices and costs, exactly: what a number of tokens costs at a price per million tokens
(:func:`cost_of`), the most whole tokens a cost budget pays for (:func:`tokens_for`), and
amounts as messages show them (:func:`money`).

Prices and costs are read as exact decimals (TOML floats parsed as :class:`~decimal.Decimal`,
``docs/budgets.md``) and compared exactly: a cost budget is the most whole tokens it pays for.
Every price and cost a budget file gives is at most :data:`MONEY_MAX` with at most
:data:`MONEY_DECIMALS` decimals, so that every product of a count and a price is exact in
60 digits.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Context, Decimal

__all__ = ["DEFAULT_CURRENCY", "MONEY_DECIMALS", "MONEY_MAX", "cost_of", "money", "tokens_for"]

DEFAULT_CURRENCY = "USD"
#: prices and costs: at most this much, with at most this many decimals, so that every product
#: of a count and a price is exact in :data:`_MONEY`'s 60 digits
MONEY_MAX = Decimal(10) ** 9
MONEY_DECIMALS = 12
_MONEY = Context(prec=60, rounding=ROUND_HALF_UP)


def cost_of(tokens: int, price: Decimal) -> Decimal:
    """What ``tokens`` cost at ``price`` currency units per million tokens, exactly.

    >>> cost_of(3412, Decimal("2.50"))
    Decimal('0.00853000')

    Runtime complexity: ``O(1)`` (numbers of a few dozen digits).
    """
    return _MONEY.multiply(Decimal(tokens), price).scaleb(-6, _MONEY)


def tokens_for(cost: Decimal, price: Decimal) -> int | None:
    """The most whole tokens ``cost`` pays for at ``price`` per million tokens, or None at a
    price of 0 (any number of tokens). A count is over a cost budget exactly when it is over
    this number: ``n * price / 10**6 > cost`` holds for a whole ``n`` iff ``n > tokens_for``.

    >>> tokens_for(Decimal("0.05"), Decimal("2.50")), tokens_for(Decimal("0.07"), Decimal("3"))
    (20000, 23333)

    Runtime complexity: ``O(1)``.
    """
    if price == 0:
        return None
    return int(_MONEY.divide_int(cost.scaleb(6, _MONEY), price))


def money(amount: Decimal, currency: str = "") -> str:
    """An amount for messages: at least two decimals, at most eight (rounded half up),
    thousands separated, then the currency.

    >>> money(Decimal("0.0085300"), "USD"), money(Decimal(1234)), money(Decimal("1E-9"), "EUR")
    ('0.00853 USD', '1,234.00', '0.00000000 EUR')

    Runtime complexity: ``O(digits)``.
    """
    d = amount.normalize(_MONEY)
    exponent = d.as_tuple().exponent
    assert isinstance(exponent, int), amount  # amounts are finite (validated)
    if exponent > -2:
        d = d.quantize(Decimal("0.01"), context=_MONEY)
    elif exponent < -8:
        d = d.quantize(Decimal("1E-8"), context=_MONEY)
    text = f"{d:,f}"
    return f"{text} {currency}" if currency else text

