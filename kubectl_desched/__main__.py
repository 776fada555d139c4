from kubectl_desched.cli import main

main()
