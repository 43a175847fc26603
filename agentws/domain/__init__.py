"""The domain: records, enums and pure rules. Nothing here does I/O."""

from agentws.domain.models import *  # noqa: F403
from agentws.domain.models import __all__ as _models_all
from agentws.domain.rules import *  # noqa: F403
from agentws.domain.rules import __all__ as _rules_all

__all__ = [*_models_all, *_rules_all]
