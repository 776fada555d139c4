"""The kubernetes-sigs descheduler's plugins (v1alpha2), one module each, named as upstream names them; the
helpers several share (nodeutilization, podorder, podstatus) beside them."""
