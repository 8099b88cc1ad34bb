module rialto/txn-load

go 1.21
