"""bureau: persistent Linux desktops for AI agents.

    from bureau import Client
    c = Client()                       # BUREAU_URL, BUREAU_TOKEN
    d = c.desktops.create("work")
    d.wait_until("running")
    print(d.exec("uname -a").stdout)
"""

from .client import Client
from .desktop import Desktop
from .errors import (BadRequest, BureauError, Conflict, Forbidden, Invalid, NotFound, RateLimited, ServerError,
                     Timeout, Unauthorized)
from .sse import ServerEvent

__version__ = "0.1.0"

__all__ = ["Client", "Desktop", "ServerEvent", "BureauError", "BadRequest", "Unauthorized", "Forbidden", "NotFound",
           "Conflict", "Invalid", "RateLimited", "ServerError", "Timeout", "__version__"]
