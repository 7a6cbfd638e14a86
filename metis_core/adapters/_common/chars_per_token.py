"""The rule of thumb every estimate of tokens from text uses: about four characters a token.

Its own module so that a cheap reader of text (the skills catalog, a gateway budget's cut stream)
need not import the history estimator (token_estimate.py) and the message model behind it.
"""

from typing import Final

CHARS_PER_TOKEN: Final = 4
