callback({
 "vers": 0.01,
 "config": {
  "rate": "perhr",
  "valueColumns": [
   "linux",
   "mswin"
  ],
  "currencies": [
   "USD"
  ],
  "regions": [
   {
    "region": "us-east",
    "footnotes": {
     "*": "notAvailableForCCorCGPU"
    },
    "instanceTypes": [
     {
      "type": "gpuCurrentGen",
      "sizes": [
       {
        "size": "g4dn.xlarge",
        "valueColumns": [
         {
          "name": "linux",
          "prices": {
           "USD": "0.1733"
          }
         },
         {
          "name": "mswin",
          "prices": {
           "USD": "N/A*"
          }
         }
        ]
       },
       {
        "size": "p4d.24xlarge",
        "valueColumns": [
         {
          "name": "linux",
          "prices": {
           "USD": "8.0468"
          }
         },
         {
          "name": "mswin",
          "prices": {
           "USD": "N/A*"
          }
         }
        ]
       },
       {
        "size": "p5.48xlarge",
        "valueColumns": [
         {
          "name": "linux",
          "prices": {
           "USD": "17.84457"
          }
         },
         {
          "name": "mswin",
          "prices": {
           "USD": "N/A*"
          }
         }
        ]
       }
      ]
     }
    ]
   },
   {
    "region": "us-west-2",
    "footnotes": {
     "*": "notAvailableForCCorCGPU"
    },
    "instanceTypes": [
     {
      "type": "gpuCurrentGen",
      "sizes": [
       {
        "size": "g4dn.xlarge",
        "valueColumns": [
         {
          "name": "linux",
          "prices": {
           "USD": "0.1764"
          }
         },
         {
          "name": "mswin",
          "prices": {
           "USD": "N/A*"
          }
         }
        ]
       },
       {
        "size": "p4d.24xlarge",
        "valueColumns": [
         {
          "name": "linux",
          "prices": {
           "USD": "8.4219"
          }
         },
         {
          "name": "mswin",
          "prices": {
           "USD": "N/A*"
          }
         }
        ]
       }
      ]
     }
    ]
   },
   {
    "region": "eu-ireland",
    "footnotes": {
     "*": "notAvailableForCCorCGPU"
    },
    "instanceTypes": [
     {
      "type": "gpuCurrentGen",
      "sizes": [
       {
        "size": "g4dn.xlarge",
        "valueColumns": [
         {
          "name": "linux",
          "prices": {
           "USD": "0.1924"
          }
         },
         {
          "name": "mswin",
          "prices": {
           "USD": "N/A*"
          }
         }
        ]
       },
       {
        "size": "g5.xlarge",
        "valueColumns": [
         {
          "name": "linux",
          "prices": {
           "USD": "0.4315"
          }
         },
         {
          "name": "mswin",
          "prices": {
           "USD": "N/A*"
          }
         }
        ]
       },
       {
        "size": "g6.xlarge",
        "valueColumns": [
         {
          "name": "linux",
          "prices": {
           "USD": "0.3982"
          }
         },
         {
          "name": "mswin",
          "prices": {
           "USD": "N/A*"
          }
         }
        ]
       },
       {
        "size": "g6e.xlarge",
        "valueColumns": [
         {
          "name": "linux",
          "prices": {
           "USD": "0.8741"
          }
         },
         {
          "name": "mswin",
          "prices": {
           "USD": "N/A*"
          }
         }
        ]
       },
       {
        "size": "p3.2xlarge",
        "valueColumns": [
         {
          "name": "linux",
          "prices": {
           "USD": "1.0215"
          }
         },
         {
          "name": "mswin",
          "prices": {
           "USD": "N/A*"
          }
         }
        ]
       },
       {
        "size": "p4d.24xlarge",
        "valueColumns": [
         {
          "name": "linux",
          "prices": {
           "USD": "9.0218"
          }
         },
         {
          "name": "mswin",
          "prices": {
           "USD": "N/A*"
          }
         }
        ]
       }
      ]
     }
    ]
   }
  ]
 }
});
