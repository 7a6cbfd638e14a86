"""People behind the gateway's pseudonymous ids: the registry (`store/users.py`) and what it takes
for one of them to leave: everything the record holds about them exported, or forgotten (docs/users.md).
"""

from metis_core.users.leaving import ForgetResult, export_user, forget_user, user_session_ids

__all__ = ["ForgetResult", "export_user", "forget_user", "user_session_ids"]
