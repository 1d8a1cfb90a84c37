"""bureau: persistent Linux desktops for AI agents.

    from bureau import Client
    c = Client()                       # BUREAU_URL, BUREAU_TOKEN
    d = c.desktops.create("work", wait_ready=True)   # running, its session up
    print(d.exec("uname -a").stdout)
"""

from .client import Client
from .desktop import Desktop
from .errors import (AlreadyDecided, BadRequest, BureauError, CannotVerify, Conflict, Denied, Expired, Forbidden, Gone,
                     HumanInControl, Invalid, NoEffect, NotFound, NotReady, RateLimited, ServerError, Timeout, Unauthorized,
                     WebhookVerificationError)
from .sse import ServerEvent

__version__ = "0.1.0"

__all__ = ["Client", "Desktop", "ServerEvent", "BureauError", "BadRequest", "Unauthorized", "Forbidden", "Denied",
           "NotFound", "Conflict", "NotReady", "CannotVerify", "HumanInControl", "AlreadyDecided", "Expired", "Gone",
           "Invalid", "NoEffect", "RateLimited", "ServerError", "Timeout", "WebhookVerificationError", "__version__"]
