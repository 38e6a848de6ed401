"""`sparkherd ctl`: a kcctl-like client of the REST API, for operators and scripts.

It speaks HTTP only (`client`), so it runs anywhere the REST API is reachable and needs
none of the worker's start-up: `manifests` reads the files `apply` and `patch offsets`
take, `views` turns answers into tables and descriptions (`tables` lays them out), and
`commands` holds the verbs and their arguments.
"""
