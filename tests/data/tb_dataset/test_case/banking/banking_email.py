# A two-server test in the style of thinkingbox-data's banking_email.py (written for convlab's
# tests); it lives in test_case/banking/ so that "banking_email.py" is found by its prefix.
from __future__ import annotations

"""!
scenario: retail_banking_email
tags: [smoke]
"""

CHECKING = "599521725"
SAVINGS = "843847393"


def sent_emails(x):
    return [e for e in x.effects["email_system"].get("effects", []) if e.get("op") == "send_message"]


def test_transfer_and_sendemail(x, judge):
    """!
    query: |
         Transfer $100 from my checking account and then send an email with confirmation?
    user_context: |
        I'd like to transfer to savings account, and the confirmation email should be sent to john@example.com
    tags: [transfer, category:user]
    """
    accounts = {a["account_number"]: a for a in x.effects["online_banking"]["accounts"]}
    assert accounts[CHECKING]["balance"] == 900.0
    assert accounts[SAVINGS]["balance"] == 5100.0
    sent = sent_emails(x)
    assert len(sent) == 1 and sent[0].get("to") == ["john@example.com"]
